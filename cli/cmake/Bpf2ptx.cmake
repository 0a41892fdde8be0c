# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Bpf2ptx.cmake: build eBPF probes with bpf2ptx and put them into a CUDA target's kernels.
#
#   list(APPEND CMAKE_MODULE_PATH /path/to/bpf2ptx/cli/cmake)
#   include(Bpf2ptx)
#
#   bpf2ptx_add_probe(NAME SOURCES probe.bpf.c
#                     [OUTPUT file.bpf.o] [INCLUDE_DIRECTORIES dir...] [DEFINITIONS X=1...])
#       `bpf2ptx build`: clang with libbpf's flags, then the verifier, at build time; a
#       target NAME whose object (property BPF2PTX_OBJECT) the next function takes.
#       Rebuilt when the source or a header it includes changes (bpf2ptx build --depfile).
#       SOURCES may be a prebuilt probe.bpf.o instead (no clang): verified and copied.
#
#   bpf2ptx_instrument(TARGET tgt PROBES NAME [INJECT_OPTIONS opt...])
#       Every CUDA source of tgt is compiled as before and then instrumented
#       (bpf2ptx-embed, beside this file: the PTX nvcc put in the object gets the probe
#       injected, is built into a fatbin for the same architectures, and replaces the
#       object's fatbin), so `cmake --build` links an instrumented tgt. Its kernels keep
#       their names; the probe's maps are globals of each kernel's module
#       (cuModuleGetGlobal(..., "bpf2ptx_map_NAME")). NAME is a bpf2ptx_add_probe target or
#       a path to a probe object. INJECT_OPTIONS go to `bpf2ptx inject` (--granularity warp,
#       --map NAME=host, ...). The target must be built with PTX for each architecture
#       (CUDA_ARCHITECTURES 90, "80;90" or 90a, not 90-real or all; several are instrumented
#       one by one) and without separable compilation. A changed probe recompiles the
#       target's CUDA sources (the launcher adds it to nvcc's depfile).
#
# Finds bpf2ptx as BPF2PTX_EXECUTABLE, else on PATH, else in the repository's
# target/release or target/debug (cargo build --release -p bpf2ptx).

include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.18)
  message(FATAL_ERROR "Bpf2ptx.cmake needs CMake 3.18 or later (set_property(SOURCE ... TARGET_DIRECTORY))")
endif()

set(_BPF2PTX_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
find_program(BPF2PTX_EXECUTABLE bpf2ptx
  HINTS "${_BPF2PTX_CMAKE_DIR}/../../target/release" "${_BPF2PTX_CMAKE_DIR}/../../target/debug"
  DOC "the bpf2ptx binary")
if(NOT BPF2PTX_EXECUTABLE)
  message(FATAL_ERROR "bpf2ptx not found: build it (cargo build --release -p bpf2ptx) "
    "or pass -DBPF2PTX_EXECUTABLE=/path/to/bpf2ptx")
endif()
set(BPF2PTX_EMBED "${_BPF2PTX_CMAKE_DIR}/bpf2ptx-embed" CACHE FILEPATH
  "the compiler launcher that instruments CUDA objects")

function(bpf2ptx_add_probe NAME)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OUTPUT" "SOURCES;INCLUDE_DIRECTORIES;DEFINITIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bpf2ptx_add_probe(${NAME}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  list(LENGTH ARG_SOURCES n)
  if(NOT n EQUAL 1)
    # One object per probe: several programs go in one .bpf.c (one clang run, one set of
    # maps); bpf2ptx inject takes one object.
    message(FATAL_ERROR "bpf2ptx_add_probe(${NAME}): SOURCES takes one .bpf.c (got ${n}); "
      "put several programs in one source")
  endif()
  get_filename_component(src "${ARG_SOURCES}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  if(ARG_OUTPUT)
    get_filename_component(out "${ARG_OUTPUT}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_BINARY_DIR}")
  else()
    set(out "${CMAKE_CURRENT_BINARY_DIR}/${NAME}.bpf.o")
  endif()
  set(flags)
  foreach(d IN LISTS ARG_INCLUDE_DIRECTORIES)
    get_filename_component(d "${d}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND flags -I "${d}")
  endforeach()
  foreach(d IN LISTS ARG_DEFINITIONS)
    list(APPEND flags -D "${d}")
  endforeach()
  if(src MATCHES "\\.o$")
    # A prebuilt object (a machine without clang): verified, then used as it is.
    add_custom_command(OUTPUT "${out}"
      COMMAND "${BPF2PTX_EXECUTABLE}" verify "${src}"
      COMMAND "${CMAKE_COMMAND}" -E copy "${src}" "${out}"
      DEPENDS "${src}" "${BPF2PTX_EXECUTABLE}"
      COMMENT "bpf2ptx verify ${NAME} (prebuilt object)"
      VERBATIM)
  else()
    set(deps)
    if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.20)
      set(deps DEPFILE "${out}.d")
    elseif(CMAKE_GENERATOR MATCHES "Make")
      set(deps IMPLICIT_DEPENDS C "${src}")
    endif()
    add_custom_command(OUTPUT "${out}"
      COMMAND "${BPF2PTX_EXECUTABLE}" build "${src}" -o "${out}" --depfile "${out}.d" ${flags}
      DEPENDS "${src}" "${BPF2PTX_EXECUTABLE}"
      ${deps}
      COMMENT "bpf2ptx build ${NAME} (clang, then the verifier)"
      VERBATIM)
  endif()
  add_custom_target(${NAME} ALL DEPENDS "${out}")
  set_target_properties(${NAME} PROPERTIES BPF2PTX_OBJECT "${out}")
endfunction()

function(bpf2ptx_instrument)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "TARGET" "PROBES;INJECT_OPTIONS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "bpf2ptx_instrument: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET "${ARG_TARGET}")
    message(FATAL_ERROR "bpf2ptx_instrument: TARGET `${ARG_TARGET}` is not a target")
  endif()
  list(LENGTH ARG_PROBES n)
  if(NOT n EQUAL 1)
    # Two probe modules in one kernel module would each bring the runtime's functions;
    # bpf2ptx inject merges one probe object.
    message(FATAL_ERROR "bpf2ptx_instrument(${ARG_TARGET}): PROBES takes one probe (got ${n}); "
      "put the programs of several probes in one .bpf.c")
  endif()
  if(TARGET "${ARG_PROBES}")
    get_target_property(obj "${ARG_PROBES}" BPF2PTX_OBJECT)
    if(NOT obj)
      message(FATAL_ERROR "bpf2ptx_instrument(${ARG_TARGET}): `${ARG_PROBES}` is not a bpf2ptx_add_probe target")
    endif()
    add_dependencies(${ARG_TARGET} ${ARG_PROBES})
  else()
    get_filename_component(obj "${ARG_PROBES}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  get_target_property(separable ${ARG_TARGET} CUDA_SEPARABLE_COMPILATION)
  if(separable)
    message(FATAL_ERROR "bpf2ptx_instrument(${ARG_TARGET}): CUDA_SEPARABLE_COMPILATION is on; "
      "bpf2ptx instruments whole-program objects")
  endif()
  # Every architecture needs its PTX in the object (bpf2ptx instruments PTX; the SASS is
  # rebuilt from it): a `-real` one has SASS only, and `all` builds SASS for old
  # architectures from PTX it does not keep. Caught here rather than at the first compile.
  get_target_property(archs ${ARG_TARGET} CUDA_ARCHITECTURES)
  foreach(a IN LISTS archs)
    if(a MATCHES "-real$" OR a STREQUAL "all" OR a STREQUAL "all-major")
      string(REGEX REPLACE "-real$" "" bare "${a}")
      message(FATAL_ERROR "bpf2ptx_instrument(${ARG_TARGET}): CUDA_ARCHITECTURES ${a} keeps no PTX "
        "for some of the SASS it builds, and bpf2ptx instruments PTX; name the architectures "
        "without -real (e.g. ${bare}, or \"80;90\" for several)")
    endif()
  endforeach()
  set(launcher "${BPF2PTX_EMBED}" --bpf2ptx "${BPF2PTX_EXECUTABLE}" --probe "${obj}")
  foreach(o IN LISTS ARG_INJECT_OPTIONS)
    list(APPEND launcher --inject-arg "${o}")
  endforeach()
  list(APPEND launcher --)
  # A launcher already set (ccache) runs inside ours.
  get_target_property(prev ${ARG_TARGET} CUDA_COMPILER_LAUNCHER)
  if(prev)
    list(APPEND launcher ${prev})
  endif()
  set_property(TARGET ${ARG_TARGET} PROPERTY CUDA_COMPILER_LAUNCHER "${launcher}")
  # A changed probe recompiles the target's CUDA sources (the launcher instruments at
  # compile time): the launcher adds the probe to the depfile nvcc writes, which CMake 3.20
  # and later read for CUDA with both Makefile and Ninja generators. Not OBJECT_DEPENDS: a
  # source file's property is shared by every target of the directory that compiles it, so
  # an uninstrumented build of the same sources would depend on the probe, build it (a
  # second, concurrent rule for the same file) and fail where it does not compile.
  if(CMAKE_VERSION VERSION_LESS 3.20 AND NOT CMAKE_GENERATOR MATCHES "Ninja")
    # Older Makefile generators scan dependencies themselves; this is the only way there.
    get_target_property(srcs ${ARG_TARGET} SOURCES)
    foreach(s IN LISTS srcs)
      if(s MATCHES "\\.cu$")
        set_property(SOURCE "${s}" TARGET_DIRECTORY ${ARG_TARGET} APPEND PROPERTY OBJECT_DEPENDS "${obj}")
      endif()
    endforeach()
  endif()
endfunction()
