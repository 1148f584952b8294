# agefence's installation (cmake --install), included from the top-level CMakeLists.txt; the
# packages made of it are in cmake/package.cmake. The installed tree is relocatable:
# agefence-report finds plots.py from its own executable (analysis/plots.h), the binaries hold
# no path of the source or build tree (-ffile-prefix-map), and their RPATH names only the
# folders of the libraries they link that are not the system's (tests/install.sh checks it).
#
#   <prefix>/bin/agefence, agefence-report
#   <prefix>/share/agefence/plots.py                   agefence-report --plots
#   <prefix>/share/agefence/configs/                   default.ini, README.md, slurm/, ...
#   <prefix>/share/doc/agefence/README.md, CHANGELOG.md, docs/ (with docs/img/): the manual
#   <prefix>/share/man/man1/agefence.1, agefence-report.1
install(TARGETS agefence agefence-report RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
set(AF_DATADIR ${CMAKE_INSTALL_DATADIR}/agefence)
install(FILES analysis/plots.py DESTINATION ${AF_DATADIR})
install(DIRECTORY configs DESTINATION ${AF_DATADIR} USE_SOURCE_PERMISSIONS)
set(AF_DOCDIR ${CMAKE_INSTALL_DATAROOTDIR}/doc/agefence)
install(FILES README.md CHANGELOG.md DESTINATION ${AF_DOCDIR})
install(DIRECTORY docs DESTINATION ${AF_DOCDIR} USE_SOURCE_PERMISSIONS)
install(FILES man/agefence.1 man/agefence-report.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
