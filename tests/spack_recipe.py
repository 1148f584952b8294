#!/usr/bin/env python3
"""packaging/spack/package.py against CMakeLists.txt, without Spack.

    spack_recipe.py PACKAGE_PY SOURCE_DIR

The recipe is parsed (ast), never run. Checks, one line per problem:
  1. it is `class Agefence(CMakePackage, CudaPackage)` with a cmake_args method;
  2. every CMake variable it passes (self.define / self.define_from_variant, or a literal
     "-DNAME=...") exists in CMakeLists.txt: an AGEFENCE_* one as an option() or a cache
     variable, any other by its name appearing there;
  3. every variant it maps is declared (variant(...)) or comes from CudaPackage (cuda, cuda_arch);
  4. it depends on mpi, hdf5+mpi, libinih and cmocka (type test), and on the Spack package of
     every find_package / pkg_check_modules dependency of CMakeLists.txt (Threads, the C
     library's, needs none).
"""
import ast
import os
import re
import sys

# CMakeLists.txt's dependencies and the Spack packages that give them.
SPACK_OF_CMAKE = {"MPI": "mpi", "HDF5": "hdf5", "PkgConfig": "pkgconfig", "inih": "libinih",
                  "cmocka": "cmocka", "CUDAToolkit": "cuda"}
FROM_CUDAPACKAGE = {"cuda", "cuda_arch"}
# Found by CMake but given by the C library and the compiler, not by a Spack package.
FROM_SYSTEM = {"Threads"}


def strings(node):
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and
            isinstance(n.value, str)]


def call_name(call):
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: spack_recipe.py PACKAGE_PY SOURCE_DIR")
    recipe, src = argv[1:]
    with open(recipe, encoding="utf-8") as f:
        tree = ast.parse(f.read(), recipe)
    with open(os.path.join(src, "CMakeLists.txt"), encoding="utf-8") as f:
        cmake = f.read()
    cmake_code = "\n".join(line.split("#", 1)[0] for line in cmake.splitlines())
    bad = []

    cls = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Agefence"]
    if not cls:
        print(f"{recipe}: no class Agefence")
        return 1
    cls = cls[0]
    bases = [b.id for b in cls.bases if isinstance(b, ast.Name)]
    if bases != ["CMakePackage", "CudaPackage"]:
        bad.append(f"class Agefence({', '.join(bases)}), expected (CMakePackage, CudaPackage)")
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    if "cmake_args" not in methods:
        bad.append("no cmake_args method")

    calls = [n for n in ast.walk(cls) if isinstance(n, ast.Call)]
    passed = set()
    mapped = set()
    for c in calls:
        name = call_name(c)
        args = [a.value for a in c.args if isinstance(a, ast.Constant)]
        if name in ("define", "define_from_variant") and args:
            passed.add(args[0])
            if name == "define_from_variant":
                mapped.add(args[1] if len(args) > 1 else args[0].lower())
    for s in strings(cls):
        passed.update(re.findall(r"-D([A-Za-z_][A-Za-z0-9_]*)", s))
        mapped.update(re.findall(r'variants\[\s*"([^"]+)"', s))
    for sub in ast.walk(cls):  # spec.variants["x"]
        if (isinstance(sub, ast.Subscript) and isinstance(sub.value, ast.Attribute) and
                sub.value.attr == "variants"):
            mapped.update(strings(sub.slice))
    if not passed:
        bad.append("cmake_args passes no CMake variable")
    for var in sorted(passed):
        if var.startswith("AGEFENCE_"):
            declared = re.search(r"\b(option\(\s*" + var + r"\b|set\(\s*" + var + r"\b[^)]*CACHE)",
                                 cmake_code)
            if not declared:
                bad.append(f"passes -D{var}, which CMakeLists.txt declares as no option or "
                           "cache variable")
        elif not re.search(r"\b" + var + r"\b", cmake_code):
            bad.append(f"passes -D{var}, which CMakeLists.txt never uses")

    declared_variants = {strings(c)[0] for c in calls if call_name(c) == "variant" and strings(c)}
    for v in sorted(mapped):
        if v not in declared_variants | FROM_CUDAPACKAGE:
            bad.append(f"maps variant '{v}', which is neither declared nor CudaPackage's")

    deps = {}
    for c in calls:
        if call_name(c) == "depends_on" and c.args and isinstance(c.args[0], ast.Constant):
            kind = [k.value.value for k in c.keywords
                    if k.arg == "type" and isinstance(k.value, ast.Constant)]
            deps[c.args[0].value] = kind[0] if kind else None
    base = {re.split(r"[@+~ ]", d)[0] for d in deps}
    for want in ("mpi", "hdf5+mpi", "libinih"):
        if want not in deps:
            bad.append(f"no depends_on(\"{want}\")")
    if deps.get("cmocka") != "test":
        bad.append('no depends_on("cmocka", type="test")')
    found = re.findall(r"find_package\(\s*(\w+)", cmake_code)
    found += re.findall(r"pkg_check_modules\(\s*\w+\s+(?:REQUIRED\s+)?(?:IMPORTED_TARGET\s+)?(\w+)",
                        cmake_code)
    for dep in found:
        if dep in FROM_SYSTEM:
            continue
        spack = SPACK_OF_CMAKE.get(dep)
        if spack is None:
            bad.append(f"CMakeLists.txt finds {dep}, which tests/spack_recipe.py maps to no "
                       "Spack package (add it to SPACK_OF_CMAKE and to the recipe)")
        elif spack not in base and not (spack == "cuda" and "CudaPackage" in bases):
            bad.append(f"CMakeLists.txt finds {dep}, but the recipe has no depends_on(\"{spack}\")")

    for b in bad:
        print(f"{recipe}: {b}")
    if bad:
        return 1
    print(f"spack_recipe: {recipe} passes {', '.join('-D' + v for v in sorted(passed))}, all in "
          f"CMakeLists.txt; depends on {', '.join(sorted(deps))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
