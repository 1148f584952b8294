# agefence's packages (cpack), made of the installation of cmake/install.cmake; included from
# the top-level CMakeLists.txt.
#   cpack -G DEB   agefence_<version>_<arch>.deb for Debian (scripts/deb-check.sh builds and
#                  checks it). Its library dependencies come from dpkg-shlibdeps on the binaries
#                  (libopenmpi3, libhdf5-openmpi-103-1, libinih1, libc6 on Debian 12);
#                  openmpi-bin is declared by hand (a singleton run starts Open MPI's orted,
#                  and several ranks need mpirun); h5py and matplotlib, for --plots only, are
#                  recommended. CUDA and NCCL are not Debian packages, so a build with the
#                  CUDA backend is refused: build the package with -DAGEFENCE_CUDA=OFF.
#   cpack -G TGZ   the installed tree as a relocatable tarball (any backend).
set(CPACK_PACKAGE_NAME agefence)
set(CPACK_PACKAGE_VENDOR "agefence")
if(NOT CPACK_PACKAGE_CONTACT)
  set(CPACK_PACKAGE_CONTACT "agefence developers")
endif()
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "simulator of the silicon aging of an MPI job's GPUs, checked bit for bit")
set(CPACK_PACKAGE_DESCRIPTION
    "agefence ages the compute units of a fleet of GPUs with a physical wear-out model, injects
the failures it predicts up to and beyond an 85% blackout, moves work off failing units,
contains every NaN/Inf they produce and logs the cost to HDF5; every run's final state is
compared bit for bit with a serial fault-free reference. agefence-report reads the logs.")
set(CPACK_GENERATOR TGZ)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-h5py, python3-matplotlib")
# Read by cpack itself (cmake/cpack-options.cmake.in): the generator-specific choices.
set(AF_CPACK_CUDA ${AGEFENCE_HAVE_CUDA})
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cmake/cpack-options.cmake.in
               ${CMAKE_CURRENT_BINARY_DIR}/cpack-options.cmake @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_BINARY_DIR}/cpack-options.cmake)
include(CPack)
