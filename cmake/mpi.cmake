# agefence: one MPI for everything. After find_package(MPI) and find_package(HDF5):
#   - AF_MPI_FAMILY: openmpi or mpich (MPICH, Intel MPI, MVAPICH, Cray MPICH), from mpi.h;
#   - the parallel HDF5 must be built on the same MPI library as the one chosen (else the binary
#     loads two MPIs and dies at start-up): checked on the libraries' ELF dependencies;
#   - MPIEXEC_EXECUTABLE belongs to that MPI: FindMPI's pick (the `mpiexec` first on the path,
#     often another MPI's) is replaced by the chosen MPI's own launcher when not given;
#   - AF_MPIEXEC_FLAVOUR: openmpi, hydra, srun or other, what tests/mpiexec.sh.in adapts to.
# Expects AF_MPIEXEC_GIVEN (MPIEXEC_EXECUTABLE was set before find_package(MPI)).

# The family, from the macros each mpi.h defines.
set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
include(CheckSymbolExists)
check_symbol_exists(OPEN_MPI mpi.h AF_MPI_IS_OPENMPI)
check_symbol_exists(MPICH_VERSION mpi.h AF_MPI_IS_MPICH)
unset(CMAKE_REQUIRED_LIBRARIES)
if(AF_MPI_IS_OPENMPI)
  set(AF_MPI_FAMILY openmpi)
elseif(AF_MPI_IS_MPICH)
  set(AF_MPI_FAMILY mpich)
else()
  set(AF_MPI_FAMILY other)
endif()

# The sonames of the MPI libraries an ELF file needs ("libmpi.so.40", "libmpich.so.12").
function(af_mpi_needed file out)
  set(${out} "" PARENT_SCOPE)
  if(NOT CMAKE_READELF OR NOT EXISTS "${file}")
    return()
  endif()
  execute_process(COMMAND ${CMAKE_READELF} -d "${file}" OUTPUT_VARIABLE dyn ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    return()
  endif()
  string(REGEX MATCHALL "\\(NEEDED\\)[^[]*\\[libmpi[^]]*\\]" hits "${dyn}")
  set(names "")
  foreach(h IN LISTS hits)
    string(REGEX REPLACE ".*\\[([^]]*)\\]" "\\1" n "${h}")
    list(APPEND names ${n})
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# What an MPI program of the chosen MPI links: a small one, built with agefence's compiler.
set(af_probe_dir ${CMAKE_BINARY_DIR}/CMakeFiles/af_mpi_probe)
file(WRITE ${af_probe_dir}/probe.c
     "#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); return MPI_Finalize(); }\n")
try_compile(af_probe_ok ${af_probe_dir}/build ${af_probe_dir}/probe.c
            LINK_LIBRARIES MPI::MPI_C COPY_FILE ${af_probe_dir}/probe)
set(af_mpi_libs "")
if(af_probe_ok)
  af_mpi_needed(${af_probe_dir}/probe af_mpi_libs)
endif()
# HDF5's own library (the one named libhdf5*, not its dependencies).
set(af_hdf5_libs "")
foreach(lib IN LISTS HDF5_C_LIBRARIES)
  get_filename_component(name "${lib}" NAME)
  if(name MATCHES "^libhdf5[^/]*\\.so")
    get_filename_component(real "${lib}" REALPATH)
    af_mpi_needed("${real}" af_hdf5_libs)
    set(af_hdf5_lib "${lib}")
    break()
  endif()
endforeach()
set(af_mismatch "")
foreach(n IN LISTS af_hdf5_libs)
  if(af_mpi_libs AND NOT n IN_LIST af_mpi_libs)
    set(af_mismatch "${n}")
  endif()
endforeach()
if(af_mismatch)
  get_filename_component(cc_name "${MPI_C_COMPILER}" NAME)
  string(REGEX REPLACE "^mpicc" "" af_suffix "${cc_name}")
  set(af_hint "-DHDF5_C_COMPILER_EXECUTABLE=<that MPI's h5pcc> or HDF5_ROOT")
  if(af_suffix)
    find_program(af_h5pcc NAMES h5pcc${af_suffix} NO_CACHE)
    if(af_h5pcc)
      set(af_hint "-DHDF5_C_COMPILER_EXECUTABLE=${af_h5pcc}")
    endif()
  endif()
  message(FATAL_ERROR " agefence: the parallel HDF5 (${af_hdf5_lib}) is built on ${af_mismatch} "
                      "but the MPI chosen (${MPI_C_COMPILER}) is ${af_mpi_libs}: point CMake at "
                      "that MPI's HDF5 in a fresh build folder (${af_hint})")
endif()
if(NOT af_mpi_libs OR NOT af_hdf5_libs)
  message(STATUS "agefence: could not compare the MPI of HDF5 (${af_hdf5_libs}) with the MPI "
                 "chosen (${af_mpi_libs}): not checked")
endif()

# The launcher's flavour, from what it says of itself.
function(af_launcher_flavour exe out)
  execute_process(COMMAND ${exe} --version OUTPUT_VARIABLE v ERROR_VARIABLE e TIMEOUT 30
                  RESULT_VARIABLE rc)
  string(APPEND v "${e}")
  if(v MATCHES "OpenRTE|Open MPI|Open-MPI")
    set(${out} openmpi PARENT_SCOPE)
  elseif(v MATCHES "HYDRA|Hydra|Intel\\(R\\) MPI")
    set(${out} hydra PARENT_SCOPE)
  elseif(v MATCHES "^slurm ")
    set(${out} srun PARENT_SCOPE)
  else()
    set(${out} other PARENT_SCOPE)
  endif()
endfunction()

# Which launcher flavours start this family's binaries as one job.
set(af_fits_openmpi openmpi srun)
set(af_fits_mpich hydra srun)
set(af_fits_other openmpi hydra srun other)
set(AF_MPIEXEC_FLAVOUR other)
if(MPIEXEC_EXECUTABLE)
  af_launcher_flavour(${MPIEXEC_EXECUTABLE} AF_MPIEXEC_FLAVOUR)
endif()
if(NOT AF_MPIEXEC_FLAVOUR IN_LIST af_fits_${AF_MPI_FAMILY})
  if(AF_MPIEXEC_GIVEN)
    message(FATAL_ERROR " agefence: MPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE} is a launcher of "
                        "${AF_MPIEXEC_FLAVOUR}, but agefence is built with ${AF_MPI_FAMILY}'s MPI "
                        "(${MPI_C_COMPILER}): pass that MPI's mpiexec")
  endif()
  # The chosen MPI's own launcher, beside its compiler wrapper, with the wrapper's suffix
  # (Debian: mpicc.mpich, mpiexec.mpich) or the family's names.
  get_filename_component(cc_dir "${MPI_C_COMPILER}" DIRECTORY)
  get_filename_component(cc_name "${MPI_C_COMPILER}" NAME)
  string(REGEX REPLACE "^mpicc" "" af_suffix "${cc_name}")
  if(AF_MPI_FAMILY STREQUAL "mpich")
    set(af_names mpiexec${af_suffix} mpiexec.hydra mpiexec.mpich mpiexec)
  else()
    set(af_names mpiexec${af_suffix} mpiexec.openmpi orterun mpiexec)
  endif()
  set(af_found "")
  foreach(n IN LISTS af_names)
    find_program(af_exe NAMES ${n} HINTS ${cc_dir} NO_CACHE)
    if(af_exe)
      af_launcher_flavour(${af_exe} fl)
      if(fl IN_LIST af_fits_${AF_MPI_FAMILY})
        set(af_found ${af_exe})
        set(AF_MPIEXEC_FLAVOUR ${fl})
        break()
      endif()
    endif()
    unset(af_exe)
  endforeach()
  if(NOT af_found)
    message(FATAL_ERROR " agefence: no launcher of ${AF_MPI_FAMILY}'s MPI (${MPI_C_COMPILER}) "
                        "found (MPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE} is ${AF_MPIEXEC_FLAVOUR}'s): "
                        "pass -DMPIEXEC_EXECUTABLE=<that MPI's mpiexec>")
  endif()
  set(MPIEXEC_EXECUTABLE ${af_found} CACHE FILEPATH "Executable for running MPI programs." FORCE)
endif()
message(STATUS "agefence: MPI ${AF_MPI_FAMILY} (${MPI_C_COMPILER}, ${af_mpi_libs}), HDF5 "
               "${af_hdf5_libs}, launcher ${MPIEXEC_EXECUTABLE} (${AF_MPIEXEC_FLAVOUR})")
