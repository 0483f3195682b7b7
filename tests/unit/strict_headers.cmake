# SPDX-License-Identifier: MIT
# The public headers under the strict warnings a program may compile with,
# run by ctest as `cmake -DCOMPILER=... -DLANG=c|c++ -DSTD=... -DINCLUDE=...
# -DSOURCE=.../strict_user.c -DWORKDIR=... -P strict_headers.cmake`:
# every header of INCLUDE/schedstm on its own, with and without
# SSTM_INLINE_BARRIERS, then SOURCE, which uses what the headers put into a
# program's own code, also with SSTM_CKPT_LIBC (the checkpoint form of
# ThreadSanitizer builds). -Werror: any warning fails. The flags are the
# ones README.md ("Compiler warnings") lists.
foreach(v COMPILER LANG STD INCLUDE SOURCE WORKDIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "strict_headers.cmake: -D${v}= is required")
  endif()
endforeach()
set(common -Wall -Wextra -Wpedantic -Wcast-qual -Wconversion -Wsign-conversion -Wshadow -Wundef
           -Wredundant-decls -Wcast-align -Wdouble-promotion)
if(LANG STREQUAL "c")
  set(flags -x c -std=${STD} ${common} -Wstrict-prototypes -Wmissing-prototypes
            -Wbad-function-cast)
  set(ext c)
else()
  set(flags -x c++ -std=${STD} ${common} -Wold-style-cast -Wmissing-declarations
            -Wzero-as-null-pointer-constant)
  set(ext cc)
  # -Wuseless-cast is GCC's alone (clang warns about an unknown option)
  execute_process(COMMAND ${COMPILER} --version OUTPUT_VARIABLE version ERROR_QUIET)
  if(NOT version MATCHES "clang")
    list(APPEND flags -Wuseless-cast)
  endif()
endif()
file(MAKE_DIRECTORY ${WORKDIR})
set(failed "")
set(n 0)
# compile(NAME FILE DEFS...): one compiler run; a failure is recorded
function(compile name file)
  execute_process(
    COMMAND ${COMPILER} ${flags} -Werror -fsyntax-only ${ARGN} -I${INCLUDE} ${file}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  math(EXPR n "${n} + 1")
  set(n ${n} PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    set(failed "${failed}\n--- ${name} ${ARGN}:\n${out}" PARENT_SCOPE)
  endif()
endfunction()
file(GLOB headers ${INCLUDE}/schedstm/*.h)
if(NOT headers)
  message(FATAL_ERROR "no headers in ${INCLUDE}/schedstm")
endif()
foreach(h IN LISTS headers)
  get_filename_component(name ${h} NAME)
  set(tu ${WORKDIR}/alone_${name}.${ext})
  file(WRITE ${tu} "#include <schedstm/${name}>\n")
  compile(${name} ${tu})
  compile(${name} ${tu} -DSSTM_INLINE_BARRIERS)
endforeach()
compile(strict_user ${SOURCE})
compile(strict_user ${SOURCE} -DSSTM_INLINE_BARRIERS)
compile(strict_user ${SOURCE} -DSSTM_INLINE_BARRIERS -DSSTM_CKPT_LIBC)
if(failed)
  string(JOIN " " shown ${flags})
  message(FATAL_ERROR "${LANG} -std=${STD}: warnings under ${shown}:${failed}")
endif()
message(STATUS "${LANG} -std=${STD}: ${n} compilations without a warning")
