# Packaging: the gzipped man page, the files only the Debian package installs,
# and the CPack settings of `cpack -G DEB` (`make package`: a Release build in
# build-pkg/ with Debian's hardening flags; the package installs under /usr).
#
# Two install sets:
#   the default component   the binary (CMakeLists.txt) and the man page: what
#                           `cmake --install` installs, under any prefix;
#   the "deb" component     /etc/clock/clock.toml, completions, systemd units,
#                           /usr/share/doc/clock (with the JSON Schemas of
#                           the JSON output in schema/): Debian paths, some absolute,
#                           so EXCLUDE_FROM_ALL (a plain `cmake --install`
#                           never writes to /etc or /lib); only CPack installs
#                           it, through CPACK_INSTALL_CMAKE_PROJECTS below.

set(CLOCK_DEB_RELEASE 1 CACHE STRING "Debian revision of the clock package (the -N of 0.1.0-N)")
set(CLOCK_PKG_DIR ${CMAKE_BINARY_DIR}/packaging)
find_program(GZIP_EXECUTABLE gzip REQUIRED)

# gzip -9n: best compression, no name or timestamp in the header, so the same
# source always gives the same bytes (Debian policy 12.1, reproducible builds).
function(clock_gzip_file SOURCE OUTPUT_NAME)
  set(out ${CLOCK_PKG_DIR}/${OUTPUT_NAME})
  string(REGEX REPLACE "\\.gz$" "" plain ${out})
  add_custom_command(OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CLOCK_PKG_DIR}
    COMMAND ${CMAKE_COMMAND} -E copy ${SOURCE} ${plain}
    COMMAND ${GZIP_EXECUTABLE} -9nf ${plain}
    DEPENDS ${SOURCE}
    COMMENT "gzip -9n ${OUTPUT_NAME}"
    VERBATIM)
endfunction()

clock_gzip_file(${CMAKE_SOURCE_DIR}/man/clock.1 clock.1.gz)
clock_gzip_file(${CMAKE_SOURCE_DIR}/packaging/debian/changelog changelog.Debian.gz)
add_custom_target(clock_packaging_files ALL
  DEPENDS ${CLOCK_PKG_DIR}/clock.1.gz ${CLOCK_PKG_DIR}/changelog.Debian.gz)
# The man page, for CMakeLists.txt's install rule.
set(CLOCK_MAN_GZ ${CLOCK_PKG_DIR}/clock.1.gz)

# A stripping install (`cpack`, `cmake --install --strip`) also drops the
# .comment and .note sections from the binary and the modules, as
# Debian's dh_strip does. Runs after CMakeLists.txt's install(TARGETS …) and
# their strip.
if(CMAKE_OBJCOPY)
  install(CODE "
    foreach(_clock_elf \"${CMAKE_INSTALL_BINDIR}/clock\" \"${CLOCK_MODULE_SUBDIR}/clock-postgres.so\"
                       \"${CLOCK_MODULE_SUBDIR}/clock-mariadb.so\"
                       \"${CLOCK_MODULE_SUBDIR}/clock-ping.so\"
                       \"${CLOCK_MODULE_SUBDIR}/clock-serve.so\")
      set(_clock_elf \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/\${_clock_elf}\")
      if(CMAKE_INSTALL_DO_STRIP AND EXISTS \"\${_clock_elf}\")
        execute_process(COMMAND \"${CMAKE_OBJCOPY}\" --remove-section=.comment
                                --remove-section=.note \"\${_clock_elf}\" COMMAND_ERROR_IS_FATAL ANY)
      endif()
    endforeach()")
endif()

# Every directory an install creates is 0755, whatever the umask.
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

# --- the "deb" component -------------------------------------------------------
install(FILES ${CMAKE_SOURCE_DIR}/config/clock.toml
  DESTINATION /etc/clock COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/completions/clock.bash
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/bash-completion/completions RENAME clock
  COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/completions/_clock
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/zsh/vendor-completions
  COMPONENT deb EXCLUDE_FROM_ALL)
# Installed, not enabled (no maintainer scripts): one host per database runs gc.
# clock-serve.service likewise: a status page is a choice, not a default.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/systemd/clock-gc.service
              ${CMAKE_SOURCE_DIR}/packaging/systemd/clock-gc.timer
              ${CMAKE_SOURCE_DIR}/packaging/systemd/clock-serve.service
  DESTINATION /lib/systemd/system COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/debian/copyright
              ${CLOCK_PKG_DIR}/changelog.Debian.gz
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/clock COMPONENT deb EXCLUDE_FROM_ALL)
# The cron alternative to the timer, as an example: in /etc/cron.d it would run
# gc on every host that installs the package.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/cron/clock-gc
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/clock/examples/cron.d
  COMPONENT deb EXCLUDE_FROM_ALL)
# The JSON Schemas of `clock status` and `clock history --format json`.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/schema/status.schema.json
              ${CMAKE_SOURCE_DIR}/packaging/schema/history.schema.json
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/clock/schema
  COMPONENT deb EXCLUDE_FROM_ALL)
# Lintian tags that do not apply to a package built outside Debian, each with
# its reason (packaging/debian/clock.lintian-overrides).
install(FILES ${CMAKE_SOURCE_DIR}/packaging/debian/clock.lintian-overrides
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/lintian/overrides RENAME clock
  COMPONENT deb EXCLUDE_FROM_ALL)
# Alert rules (with their promtool unit tests) and a Grafana dashboard over
# `clock status --format prometheus`.
install(FILES ${CMAKE_SOURCE_DIR}/packaging/prometheus/clock.rules.yml
              ${CMAKE_SOURCE_DIR}/packaging/prometheus/clock.rules.test.yml
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/clock/prometheus COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/grafana/clock-dashboard.json
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/clock/grafana COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/packaging/schema/missed.schema.json
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/clock/schema COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/sql/postgres/roles.sql
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/clock/examples/postgres
  COMPONENT deb EXCLUDE_FROM_ALL)
install(FILES ${CMAKE_SOURCE_DIR}/sql/mariadb/roles.sql
  DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/clock/examples/mariadb
  COMPONENT deb EXCLUDE_FROM_ALL)

# The top entry of the Debian changelog must name the version being packaged.
file(STRINGS ${CMAKE_SOURCE_DIR}/packaging/debian/changelog _clock_changelog_top LIMIT_COUNT 1)
if(NOT _clock_changelog_top MATCHES "^clock \\(${PROJECT_VERSION}-${CLOCK_DEB_RELEASE}\\) ")
  message(WARNING "packaging/debian/changelog starts with '${_clock_changelog_top}', "
    "not version ${PROJECT_VERSION}-${CLOCK_DEB_RELEASE}: add an entry before `make package`.")
endif()

# --- CPack ---------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME clock)
set(CPACK_PACKAGE_VENDOR "clock developers")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "clock developers <clock@example.invalid>")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# The default component (binary, man page), then the deb-only files.
set(CPACK_INSTALL_CMAKE_PROJECTS
    "${CMAKE_BINARY_DIR};clock;ALL;/"
    "${CMAKE_BINARY_DIR};clock;deb;/")
set(CPACK_STRIP_FILES ON)

set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "serialize shell jobs across machines with a shared SQL lock table")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION [=[
clock wraps a cron entry, a bootstrap script or an import job, unchanged
(clock run --resource bootstrap -- ./install.sh), so that only one of them
runs at a time, on one host or on hundreds. It sits beside flock(1),
etcdctl lock and consul lock.

Resources are hierarchical: ldap.import conflicts with ldap, not with
ldap.export. Locks are exclusive, shared or counting semaphores, taken in
first-come, first-served order with deadlock detection. Every grant is a
lease measured on the database server's clock, renewed while the job runs,
and carries a fencing token that only ever grows.

Locks live in a local SQLite file by default; point clock at PostgreSQL or
MariaDB/MySQL to lock across machines. The package installs /etc/clock/clock.toml, bash and
zsh completions, a systemd timer for clock gc and a service for clock
serve, the read-only status page (neither enabled).]=])

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${CLOCK_DEB_RELEASE})
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "clock developers <clock@example.invalid>")
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# conffiles: dpkg keeps local edits of /etc/clock/clock.toml on upgrade and
# asks before replacing them.
file(WRITE ${CLOCK_PKG_DIR}/control/conffiles "/etc/clock/clock.toml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CLOCK_PKG_DIR}/control/conffiles)
# Control files with Debian's modes (0644 for conffiles), not the source's.
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

include(CPack)
