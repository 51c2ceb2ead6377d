# lit configuration of the enigma tests. CMake writes lit.site.cfg.py into
# the build tree (paths to the tools), which then loads this file.
import os
import shutil

import lit.formats

config.name = "Enigma"
# lit's internal shell (the external one is deprecated in newer lit).
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)

if not hasattr(config, "enigma_obj_root"):
    lit_config.fatal("run lit on the build tree's test directory "
                     "(<build>/test), where CMake wrote lit.site.cfg.py")

config.test_exec_root = os.path.join(config.enigma_obj_root, "test")

# Directories that hold no lit tests of ours.
config.excludes = ["msl-host", "CMakeLists.txt", "lit.cfg.py",
                   "lit.site.cfg.py.in"]

# Our tools first, then FileCheck / not from LLVM.
path = os.pathsep.join([config.enigma_tools_dir, config.llvm_tools_dir,
                        config.environment.get("PATH", os.environ["PATH"])])
config.environment["PATH"] = path
for tool in ("enigma-opt", "enigma-translate", "FileCheck", "not"):
    if not shutil.which(tool, path=path):
        lit_config.fatal(f"cannot find {tool} in {path}")

src = config.enigma_src_root
prelude = os.path.join(src, "include", "enigma", "Target", "Prelude")
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%enigma_src", src))
# Compile MSL against the MSL host runtime's metal_stdlib (check_msl.py
# imports enigma with this build's core).
config.environment["ENIGMA_CORE_DIR"] = os.path.join(
    config.enigma_obj_root, "python", "enigma")
config.substitutions.append(
    ("%check_msl", "%s %s" % (config.python_executable,
                              os.path.join(src, "test", "msl-host",
                                           "check_msl.py"))))
# Syntax-check host C++ emitted by --enigma-to-cpp against its prelude.
config.substitutions.append(
    ("%host_cxx_syntax",
     "%s -std=c++17 -fsyntax-only -x c++ -I %s" % (config.host_cxx, prelude)))
