# SPDX-License-Identifier: MIT
# The library's version, as the soname and the CMake package express it.
#
# project() holds the version (MAJOR.MINOR.PATCH). While MAJOR is 0 the ABI
# may change with every minor release, so:
#   - the soname carries MAJOR.MINOR (libschedstm.so.0.2): programs linked
#     against 0.1 do not load 0.2 by mistake;
#   - find_package(schedstm X.Y) accepts only the same MAJOR.MINOR
#     (SameMinorVersion), any patch release at or above the request.
# From 1.0 on, compatible releases keep MAJOR: the soname is libschedstm.so.MAJOR
# and the package is SameMajorVersion.
#
# include/schedstm/common.h's SSTM_VERSION_* macros must say the same
# version as project(): configuring fails otherwise. The release procedure
# (CHANGELOG.md, then this version, then a vX.Y.Z tag) is in CONTRIBUTING.md.
#
# Sets SCHEDSTM_SOVERSION and SCHEDSTM_PACKAGE_COMPATIBILITY.

if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(SCHEDSTM_SOVERSION "${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}")
  set(SCHEDSTM_PACKAGE_COMPATIBILITY SameMinorVersion)
else()
  set(SCHEDSTM_SOVERSION "${PROJECT_VERSION_MAJOR}")
  set(SCHEDSTM_PACKAGE_COMPATIBILITY SameMajorVersion)
endif()

set(_sstm_common_h "${PROJECT_SOURCE_DIR}/include/schedstm/common.h")
file(STRINGS "${_sstm_common_h}" _sstm_version_lines
  REGEX "^#define SSTM_VERSION_(MAJOR|MINOR|PATCH|STRING) ")
set(_sstm_expect_MAJOR "${PROJECT_VERSION_MAJOR}")
set(_sstm_expect_MINOR "${PROJECT_VERSION_MINOR}")
set(_sstm_expect_PATCH "${PROJECT_VERSION_PATCH}")
set(_sstm_expect_STRING "\"${PROJECT_VERSION}\"")
foreach(_part MAJOR MINOR PATCH STRING)
  set(_found "")
  foreach(_line IN LISTS _sstm_version_lines)
    if(_line MATCHES "^#define SSTM_VERSION_${_part} +([^ ]+) *$")
      set(_found "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  if(NOT _found STREQUAL _sstm_expect_${_part})
    message(FATAL_ERROR
      "include/schedstm/common.h: SSTM_VERSION_${_part} is '${_found}', but project() "
      "says version ${PROJECT_VERSION} (expected ${_sstm_expect_${_part}}). "
      "Update both together (CONTRIBUTING.md, 'Releases').")
  endif()
endforeach()
unset(_found)
unset(_sstm_version_lines)
unset(_sstm_common_h)
