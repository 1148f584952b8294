# Spack recipe for agefence, in the form of Spack's built-in CMakePackage recipes (Spack 0.22
# and later: the "c"/"cxx" language dependencies). It is not tested against a Spack instance:
# tests/spack_recipe.py (test spack_recipe) only parses it and checks that every CMake variable
# it passes exists in CMakeLists.txt and that it depends on every library CMakeLists.txt finds.
#
# To use it, put it in a repository of your own:
#   spack repo create ~/spack-agefence
#   mkdir -p ~/spack-agefence/packages/agefence
#   cp packaging/spack/package.py ~/spack-agefence/packages/agefence/
#   spack repo add ~/spack-agefence
# then, once `git` below names the published repository:
#   spack install agefence                          # the CPU backend
#   spack install agefence +cuda cuda_arch=90       # with the cuda backend and the nccl fabric
# or build a local checkout, in a Spack environment:
#   spack develop --path <checkout> agefence@=main && spack add agefence@=main && spack install
#
# Spack's INI parser package is "libinih" (Debian's is libinih1/libinih-dev); its meson build
# installs the inih.pc that CMakeLists.txt looks for with pkg-config (not checked here).

from spack.package import *


class Agefence(CMakePackage, CudaPackage):
    """Simulates the silicon aging of the GPUs of an MPI job and measures what surviving it
    costs: a physical wear-out model, failures injected up to and beyond an 85% blackout, work
    moved off failing units, every NaN/Inf contained, the cost logged to HDF5, and every run's
    final state checked bit for bit against a serial fault-free reference."""

    # git = "https://<host>/<owner>/agefence.git"   (where the project is published)

    version("main", branch="main")

    variant(
        "plots",
        default=True,
        description="agefence-report --plots: Python 3 with h5py and matplotlib at run time",
    )

    depends_on("c", type="build")
    depends_on("cxx", type="build", when="+cuda")  # nvcc's host compiler (kernels/*.cu)
    depends_on("cmake@3.25:", type="build")
    depends_on("pkgconfig", type="build")

    depends_on("mpi")
    depends_on("hdf5+mpi")  # the parallel HDF5: CMakeLists.txt refuses a serial one
    depends_on("libinih")
    depends_on("cmocka", type="test")  # only with BUILD_TESTING (spack install --test=root)
    depends_on("nccl", when="+cuda")  # the nccl fabric (fabric/fabric_nccl.c)

    with when("+plots"):
        depends_on("python@3:", type="run")
        depends_on("py-h5py", type="run")
        depends_on("py-matplotlib", type="run")
        depends_on("py-numpy", type="run")

    def cmake_args(self):
        spec = self.spec
        args = [
            # AGEFENCE_CUDA is AUTO by default: a package says which it is.
            self.define_from_variant("AGEFENCE_CUDA", "cuda"),
            self.define("BUILD_TESTING", self.run_tests),
        ]
        if spec.satisfies("+cuda"):
            nccl = spec["nccl"]
            args.append(self.define("NCCL_INCLUDE_DIR", nccl.prefix.include))
            args.append(self.define("NCCL_LIBRARY", nccl.libs[0]))
            cuda_arch = spec.variants["cuda_arch"].value
            if cuda_arch[0] != "none":
                # Without it the project's default: sm_90 code plus compute_75 PTX.
                args.append(self.define("CMAKE_CUDA_ARCHITECTURES", cuda_arch))
        return args

    def setup_run_environment(self, env):
        # agefence-report --plots tries /usr/bin/python3 first: point it at Spack's Python.
        if self.spec.satisfies("+plots"):
            env.set("AGEFENCE_PYTHON", self.spec["python"].command.path)
