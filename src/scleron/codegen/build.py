"""Compiling a generated folder with cffi, installing it atomically, loading it back."""
import importlib.util
import os
import shutil
import sys
import tempfile
import uuid

from ..errors import BuildError


def compile_folder(folder, name):
    """Runs the folder's cffi build script; the compiled module lands in the folder."""
    spec = importlib.util.spec_from_file_location(f"_scleron_build_{name}_{uuid.uuid4().hex}",
                                                  os.path.join(folder, f"build_{name}.py"))
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    if shutil.which(os.environ.get("CC", "cc")) is None and shutil.which("gcc") is None:
        raise BuildError("no C compiler found: install gcc (e.g. `apt-get install gcc`) or set CC")
    build_dir = os.path.join(folder, "_build")
    log_path = os.path.join(folder, "build.log")
    try:
        import io
        from contextlib import redirect_stderr, redirect_stdout
        buf = io.StringIO()
        with redirect_stdout(buf), redirect_stderr(buf):
            built = builder.build(tmpdir=build_dir)
    except Exception as exc:          # distutils/setuptools raise several types here
        with open(log_path, "w") as fh:
            fh.write(f"{type(exc).__name__}: {exc}\n")
        raise BuildError(f"compiling {name} failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                         f"log: {log_path}") from None
    target = os.path.join(folder, os.path.basename(built))
    os.replace(built, target)
    shutil.rmtree(build_dir, ignore_errors=True)
    return target


def install_folder(tmp, out_dir):
    """Moves a finished folder into place. The old folder is swapped out by renames, so a
    reader sees either the old or the new folder, never a half-written one."""
    out_dir = os.path.abspath(out_dir)
    if os.path.isdir(out_dir):
        old = f"{out_dir}.old-{uuid.uuid4().hex[:8]}"
        try:
            os.rename(out_dir, old)
        except FileNotFoundError:
            old = None
        try:
            os.rename(tmp, out_dir)
        except OSError:
            # another process installed first: keep theirs
            shutil.rmtree(tmp, ignore_errors=True)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    else:
        try:
            os.rename(tmp, out_dir)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)


def make_temp_folder(out_dir):
    parent = os.path.dirname(os.path.abspath(out_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(out_dir)}.tmp-", dir=parent)
    os.chmod(tmp, 0o755)
    return tmp


def load_package(folder):
    """Imports a generated folder as a package (a fresh module object each time)."""
    folder = os.path.abspath(folder)
    init = os.path.join(folder, "__init__.py")
    if not os.path.isfile(init):
        raise FileNotFoundError(f"{folder} is not a generated scleron folder (no __init__.py)")
    modname = f"scleron_generated_{os.path.basename(folder)}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(modname, init, submodule_search_locations=[folder])
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    spec.loader.exec_module(mod)
    return mod
