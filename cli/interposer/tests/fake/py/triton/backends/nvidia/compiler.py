# Triton 3.x's NVIDIA backend as bpf2ptx trace's Python hook sees it: `add_stages` fills
# the stage table with a `ptx` stage that sets metadata["name"] (here the "LLVM IR" is a
# dict holding the PTX and the kernel's name) and a `cubin` stage that assembles the PTX
# (here: records it).
assembled = []


class CUDABackend:
    def make_ptx(self, src, metadata, options, capability):
        metadata["name"] = src["name"]
        return src["ptx"]

    def make_cubin(self, src, metadata, options, capability):
        assembled.append(src)
        return b"cubin"

    def add_stages(self, stages, options, language):
        stages["ptx"] = lambda src, metadata: self.make_ptx(src, metadata, options, 90)
        stages["cubin"] = lambda src, metadata: self.make_cubin(src, metadata, options, 90)
