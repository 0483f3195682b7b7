# SPDX-License-Identifier: MIT
# Compile-time checks of SSTM_LOAD / SSTM_STORE (<schedstm/generic.h>), run
# by ctest as `cmake -DCOMPILER=... -DLANG=c|c++ -DINCLUDE=... -DSOURCE=...
# -DCASE=... -DEXPECT=ok|fail [-DMESSAGE=...] -P generic_compile.cmake`.
# EXPECT=ok: the case compiles without a warning (-Werror). EXPECT=fail: it
# does not compile, and the compiler's output contains MESSAGE when given.
foreach(v COMPILER LANG INCLUDE SOURCE CASE EXPECT)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "generic_compile.cmake: -D${v}= is required")
  endif()
endforeach()
if(LANG STREQUAL "c")
  set(flags -x c -std=c11 -pedantic)
else()
  set(flags -x c++ -std=c++11 -pedantic)
endif()
foreach(def "" "-DSSTM_INLINE_BARRIERS")
  execute_process(
    COMMAND ${COMPILER} ${flags} -Wall -Wextra -Werror -fsyntax-only ${def}
            -I${INCLUDE} -DCASE_${CASE} ${SOURCE}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(EXPECT STREQUAL "ok")
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "case ${CASE} (${LANG} ${def}) should compile cleanly:\n${out}")
    endif()
  else()
    if(rc EQUAL 0)
      message(FATAL_ERROR "case ${CASE} (${LANG} ${def}) compiled; it must be rejected")
    endif()
    if(DEFINED MESSAGE AND NOT out MATCHES "${MESSAGE}")
      message(FATAL_ERROR
              "case ${CASE} (${LANG} ${def}) failed without the message '${MESSAGE}':\n${out}")
    endif()
  endif()
  message(STATUS "case ${CASE} (${LANG} ${def}): ${EXPECT} as expected")
endforeach()
