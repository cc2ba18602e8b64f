# SPDX-License-Identifier: GPL-2.0-or-later
# One static library per source folder, and the build enforces the arrows between them.
#
# Every source includes headers by their path from the repository top
# (`#include "daemon/kernel/fs.h"`), but no target sees the repository top. Each layer
# stages its own folder's headers (symlinks, this folder only, not its subfolders) in
# build/layers/<target>/<folder>/ and exports that directory; a target therefore finds
# exactly the headers of its own folder and of the layers it links (PUBLIC links are
# transitive: a layer sees everything below the layers it names). Including anything
# else fails to compile with "No such file or directory" — see docs/architecture.md for
# the arrows and tests/README.md for a demonstration.
#
# cxiosync_layer(<target> <folder> [RECURSE] [LINK <targets...>] [PRIVATE_LINK <targets...>])
#   RECURSE: the folder and all its subfolders are one layer (policy/).
#   Sources: <folder>/*.cpp (with RECURSE: **/*.cpp), except programs (*_main.cpp).
function(cxiosync_layer target folder)
  cmake_parse_arguments(PARSE_ARGV 2 L "RECURSE" "" "LINK;PRIVATE_LINK")
  set(src ${PROJECT_SOURCE_DIR}/${folder})
  set(stage ${PROJECT_BINARY_DIR}/layers/${target})
  get_filename_component(parent ${stage}/${folder} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(L_RECURSE)
    file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${src}/*.cpp)
    if(NOT IS_SYMLINK ${stage}/${folder})
      file(CREATE_LINK ${src} ${stage}/${folder} SYMBOLIC)
    endif()
  else()
    file(GLOB sources CONFIGURE_DEPENDS ${src}/*.cpp)
    file(GLOB headers CONFIGURE_DEPENDS ${src}/*.h)
    file(MAKE_DIRECTORY ${stage}/${folder})
    foreach(header ${headers})
      get_filename_component(name ${header} NAME)
      file(CREATE_LINK ${header} ${stage}/${folder}/${name} SYMBOLIC)
    endforeach()
  endif()
  list(FILTER sources EXCLUDE REGEX "_main\\.cpp$")
  if(sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target} PUBLIC ${stage})
    target_link_libraries(${target} PUBLIC ${L_LINK} PRIVATE ${L_PRIVATE_LINK})
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target} INTERFACE ${stage})
    target_link_libraries(${target} INTERFACE ${L_LINK})
  endif()
endfunction()
