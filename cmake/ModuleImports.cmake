# module_imports_list(OUT_VAR MODULE_TARGET LIBRARIES...): a linker dynamic list
# (ld --dynamic-list) naming every dynamic symbol, imported or defined, of the
# PostgreSQL module and of its C++ libraries (libpqxx), for `clock` to export
# those of them it defines.
#
# The module binds clock_core, spdlog's registry and, with the static
# runtime, the C++ runtime from the executable that loads it, so there is one
# copy of each. Exporting everything instead (--export-dynamic) put ~6,300
# symbols in clock's dynamic table: every symbol the module's twenty
# libraries bind was checked against it first, and its pages were resident
# (tests/bench: 0.8 MiB more peak RSS on PostgreSQL, 0.3 ms more per SQLite
# run). The list is regenerated whenever the module is rebuilt.
function(module_imports_list out_var module_target)
  set(list_file ${CMAKE_BINARY_DIR}/generated/${module_target}.imports)
  string(REPLACE ";" "|" libraries "${ARGN}")
  add_custom_command(
    OUTPUT ${list_file}
    COMMAND ${CMAKE_COMMAND} -DNM=${CMAKE_NM} -DOUT=${list_file}
            "-DFILES=$<TARGET_FILE:${module_target}>|${libraries}"
            -P ${CMAKE_SOURCE_DIR}/cmake/ModuleImportsScript.cmake
    DEPENDS ${module_target} ${CMAKE_SOURCE_DIR}/cmake/ModuleImportsScript.cmake
    COMMENT "Listing the dynamic symbols of ${module_target} and its libraries"
    VERBATIM)
  add_custom_target(${module_target}_imports DEPENDS ${list_file})
  set(${out_var} ${list_file} PARENT_SCOPE)
endfunction()
