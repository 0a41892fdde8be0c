# unsupported: a kfunc the runtime does not have (only the numeric iterators).
r1 = 0
call kfunc(bpf_obj_drop_impl)   ; error: unsupported does not exist on the GPU
r0 = 0
exit
