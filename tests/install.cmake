# Provenance, installation and packaging tests (included from tests/CMakeLists.txt).
#   version       install  tests/version.sh: --version names this build's git revision; a
#                          `git archive` export builds as "<version> (no git)"
add_test(NAME version
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/version.sh $<TARGET_FILE:agefence>
                 ${PROJECT_SOURCE_DIR} ${PROJECT_VERSION} ${CMAKE_CURRENT_BINARY_DIR}/runs/version)
set_tests_properties(version PROPERTIES LABELS install TIMEOUT 300 SKIP_RETURN_CODE 77)

#   mpi_match     install  tests/mpi_match.sh: configure refuses a parallel HDF5 of another MPI
#                          and another MPI's mpiexec in one line each, and derives the launcher
#                          from the MPI (SKIP without both Debian MPIs)
add_test(NAME mpi_match
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/mpi_match.sh ${PROJECT_SOURCE_DIR}
                 ${CMAKE_CURRENT_BINARY_DIR}/runs/mpi_match)
set_tests_properties(mpi_match PROPERTIES LABELS install TIMEOUT 300 SKIP_RETURN_CODE 77)

#   install       install  tests/install.sh: cmake --install into a temporary prefix, moved
#                          away (mv), run from there in a bare environment: no path of the
#                          source or build tree in it, a singleton run of the default scenario,
#                          agefence-report --plots with the plots.py found from the executable
add_test(NAME install
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/install.sh ${PROJECT_BINARY_DIR}
                 ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/runs/install)
set_tests_properties(install PROPERTIES LABELS install TIMEOUT 300)

#   man_pages     unit     tests/man_pages.py: man/agefence.1 and man/agefence-report.1 name
#                          every command, option, benchmark and variable that --help and
#                          `agefence bench --list` print (and format without a groff warning)
add_test(NAME man_pages
         COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/man_pages.py $<TARGET_FILE:agefence>
                 $<TARGET_FILE:agefence-report> ${PROJECT_SOURCE_DIR}/man)
set_tests_properties(man_pages PROPERTIES LABELS unit TIMEOUT 120)

#   deb_check     install  scripts/deb-check.sh: a build of a `git archive` export with the CPU
#                          backend, cpack -G DEB, its Depends and Recommends, apt-get install
#                          of the file alone, the run and the report from /usr/bin, apt-get
#                          remove (SKIP when not root). Alone: it builds on every core and
#                          installs into /usr.
add_test(NAME deb_check
         COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/deb-check.sh
                 ${CMAKE_CURRENT_BINARY_DIR}/runs/deb_check)
set_tests_properties(deb_check PROPERTIES LABELS install TIMEOUT 900 SKIP_RETURN_CODE 77
                     RUN_SERIAL TRUE)

#   spack_recipe  unit     tests/spack_recipe.py: packaging/spack/package.py parses, is a
#                          CMakePackage and CudaPackage, passes only CMake variables that
#                          CMakeLists.txt has, depends on every library CMakeLists.txt finds
#                          (no Spack here: the recipe itself is not built)
add_test(NAME spack_recipe
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/spack_recipe.py
                 ${PROJECT_SOURCE_DIR}/packaging/spack/package.py ${PROJECT_SOURCE_DIR})
set_tests_properties(spack_recipe PROPERTIES LABELS unit TIMEOUT 60)
