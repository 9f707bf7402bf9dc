# Included into the previous release's configure by build_release.sh
# (CMAKE_PROJECT_INCLUDE): that tree compiles in unity batches, as this one
# does (CMakeLists.txt), but for its few files whose anonymous namespaces
# repeat a name of another file of the same target. Those compile alone.
# Runs at the end of the top directory, once its targets exist.
function(clock_release_unity_exceptions)
  set_source_files_properties(
    src/run/signals.cpp src/store/postgres_loader.cpp src/store/server/status_rows.cpp
    DIRECTORY ${CMAKE_SOURCE_DIR}
    PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL clock_release_unity_exceptions)
