"""Compiling a generated folder with cffi, installing it atomically, loading it back.

What this module promises (scleron.generate relies on it):

- Generated output is never half-written. Generation writes into a hidden sibling of the
  output folder, `.NAME.tmp-XXXXXXXX`, and renames it into place; the previous folder is
  renamed aside first and removed afterwards. A reader sees the old folder or the new one.
- Concurrent runs are clean. Installing and loading hold an exclusive flock on the output
  folder's parent directory (a lock on the directory itself: no lock file is written), so two
  processes installing into one folder take turns; the last one wins and both results are
  valid. Loading under the same lock never sees a folder in the middle of a swap.
- An interrupted run loses nothing. A process killed mid-compile leaves only its temporary
  folder; the next run removes such folders once they are STALE_AFTER seconds old and no
  living process holds them (each builder holds a shared flock on its temporary folder). A
  process killed between the two renames of an install leaves the previous folder under
  `.NAME.old-*`; the next install or load renames it back.
- An existing output folder is only ever replaced when it is empty or a scleron output folder
  (it has a scleron.json): `-o ~/Documents` is refused, not deleted.
- The C compiler runs in a child process. Its full output goes to a build.log; a missing
  compiler or a compiler error is one BuildError line that says what to install or where the
  log is (the log of a failed build is kept in the system temporary folder, because the
  failed build folder itself is removed).
"""
import glob
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from contextlib import contextmanager

from ..errors import BuildError

try:
    import fcntl
except ImportError:              # Windows: no flock; installs are still atomic renames
    fcntl = None

STALE_AFTER = 3600.0             # seconds after which an unheld temporary folder is debris
_held = {}                       # temporary folder -> fd holding a shared flock on it
_made = {}                       # temporary folder -> parent folders created for it

INSTALL_HINT = ("install one, e.g. `apt-get install gcc` (Debian/Ubuntu), `dnf install gcc` "
                "(Fedora), `xcode-select --install` (macOS), or set CC to a C compiler")

# Runs in the child process: imports the folder's build script and compiles into a temporary
# build folder; the last line of its output names the compiled module.
_CHILD = """\
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_scleron_build", sys.argv[1])
builder = importlib.util.module_from_spec(spec)
spec.loader.exec_module(builder)
built = builder.build(tmpdir=sys.argv[2], verbose=True)
print("SCLERON_BUILT=" + built)
"""


# ---- the C compiler ----------------------------------------------------------------------------
def find_c_compiler(environ=None):
    """(compiler command, environment overrides) that distutils will use, or a BuildError.

    distutils runs $CC when it is set, otherwise the compiler Python was built with
    (sysconfig CC, usually gcc). When that one is missing but cc, gcc or clang is on PATH, the
    override {"CC": that} makes distutils use it.
    """
    env = os.environ if environ is None else environ
    if os.name == "nt":          # MSVC is found by distutils itself
        return None, {}
    cc = env.get("CC", "").strip()
    path = env.get("PATH", os.defpath)
    if cc:
        words = shlex.split(cc)
        if words and shutil.which(words[0], path=path):
            return cc, {}
        raise BuildError(f"no C compiler: CC={cc!r} was not found; install it, or set CC to an "
                         "installed C compiler (e.g. CC=gcc)")
    default = sysconfig.get_config_var("CC") or "cc"
    words = shlex.split(default)
    if words and shutil.which(words[0], path=path):
        return default, {}
    tried = [words[0]] if words else []
    for alt in ("cc", "gcc", "clang"):
        if alt in tried:
            continue
        tried.append(alt)
        if shutil.which(alt, path=path):
            return alt, {"CC": alt}
    raise BuildError(f"no C compiler found (looked for {', '.join(tried)} on PATH): {INSTALL_HINT}")


def _first_error(log_text):
    """The most telling line of a compiler log, for a one-line message."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    for pattern in ("Python.h", "fatal error", "error:", "Error:", "error", "Error"):
        for ln in lines:
            if pattern in ln and not ln.startswith("SCLERON_BUILT="):
                return ln
    return lines[-1] if lines else "no output"


def _hint(log_text):
    if "Python.h" in log_text:
        return ("the Python development headers are missing: install them (e.g. `apt-get install "
                "python3-dev`)")
    if "cffi" in log_text and ("No module named" in log_text or "ModuleNotFoundError" in log_text):
        return "cffi is missing: `pip install cffi`"
    if "command" in log_text and "failed: No such file or directory" in log_text:
        return f"the C compiler could not be run: {INSTALL_HINT}"
    return None


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def compile_folder(folder, name):
    """Compiles the folder's C code with its cffi build script (build_NAME.py) in a child
    process; the compiled module lands in the folder. Returns its path.

    The child's full output (the compiler's commands and messages) is written to
    folder/build.log while it runs; on failure it is copied to the system temporary folder
    and the BuildError names that copy. On success the log is removed.
    """
    folder = os.path.abspath(folder)
    try:
        return _compile(folder, name)
    except BaseException:
        if folder in _made or folder in _held:     # a make_temp_folder folder: nothing to keep
            discard_temp_folder(folder)
        raise


def _compile(folder, name):
    script = os.path.join(folder, f"build_{name}.py")
    if not os.path.isfile(script):
        raise BuildError(f"{folder} has no build script build_{name}.py")
    _, overrides = find_c_compiler()
    env = dict(os.environ, **overrides)
    build_dir = tempfile.mkdtemp(prefix="_build-", dir=folder)
    log_path = os.path.join(folder, "build.log")
    try:
        with open(log_path, "w") as log:
            log.write(f"# scleron: compiling {name} in {folder}\n")
            log.flush()
            proc = subprocess.run([sys.executable, "-c", _CHILD, script, build_dir], cwd=folder,
                                  env=env, stdin=subprocess.DEVNULL, stdout=log,
                                  stderr=subprocess.STDOUT)
        with open(log_path, errors="replace") as fh:
            text = fh.read()
        built = [ln[len("SCLERON_BUILT="):] for ln in text.splitlines() if ln.startswith("SCLERON_BUILT=")]
        if proc.returncode != 0 or not built or not os.path.isfile(built[-1]):
            kept = _keep_log(log_path, name)
            os.remove(log_path)
            hint = _hint(text)
            raise BuildError(f"compiling {name} failed: {_one_line(_first_error(text))}"
                             + (f"; {hint}" if hint else "")
                             + f"; full compiler output in {kept}")
        target = os.path.join(folder, os.path.basename(built[-1]))
        os.replace(built[-1], target)
        os.remove(log_path)
        return target
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)


def _keep_log(log_path, name):
    """A copy of a failed build's log that outlives the build folder."""
    fd, kept = tempfile.mkstemp(prefix=f"scleron-{name}-", suffix=".build.log")
    with os.fdopen(fd, "wb") as out, open(log_path, "rb") as src:
        shutil.copyfileobj(src, out)
    return kept


# ---- locks -----------------------------------------------------------------------------------
@contextmanager
def _dir_lock(path):
    """An exclusive flock on a directory (a no-op where flock is unavailable)."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(path, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)          # releases the lock


def _hold(folder):
    """Marks a temporary folder as in use by this process (a shared flock on it)."""
    if fcntl is None:
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
        fcntl.flock(fd, fcntl.LOCK_SH)
        _held[os.path.abspath(folder)] = fd
    except OSError:
        pass


def _release(folder):
    fd = _held.pop(os.path.abspath(folder), None)
    if fd is not None:
        os.close(fd)


def _unheld(folder):
    """True when no process holds the folder (nobody is building in it)."""
    if fcntl is None:
        return True
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


# ---- temporary folders and installing ----------------------------------------------------------
def _parts(out_dir):
    out_dir = os.path.abspath(out_dir)
    return out_dir, os.path.dirname(out_dir), os.path.basename(out_dir)


def _siblings(parent, base, kind):
    return sorted(glob.glob(os.path.join(glob.escape(parent), f".{glob.escape(base)}.{kind}-*")))


def is_output_folder(path):
    """An empty folder or a scleron output folder (it has a scleron.json)."""
    return os.path.isdir(path) and not os.path.islink(path) and (
        not os.listdir(path) or os.path.isfile(os.path.join(path, "scleron.json")))


def _check_replaceable(out_dir):
    if os.path.lexists(out_dir) and not is_output_folder(out_dir):
        what = "a folder" if os.path.isdir(out_dir) else "a file"
        raise BuildError(f"{out_dir} exists and is {what} that scleron did not write (no "
                         "scleron.json): refusing to replace it; choose another output folder")


def clean_stale(out_dir, max_age=STALE_AFTER):
    """Removes leftover `.NAME.tmp-*` folders of killed runs: older than max_age seconds and
    held by no process. Returns the removed paths."""
    out_dir, parent, base = _parts(out_dir)
    removed = []
    now = time.time()
    for path in _siblings(parent, base, "tmp"):
        try:
            age = now - os.lstat(path).st_mtime
        except OSError:
            continue
        if age > max_age and os.path.isdir(path) and path not in _held and _unheld(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def make_temp_folder(out_dir):
    """A fresh hidden folder next to out_dir to generate into (held by this process until it
    is installed). Refuses early when out_dir could not be replaced."""
    out_dir, parent, base = _parts(out_dir)
    _check_replaceable(out_dir)
    missing = []
    up = parent
    while up and not os.path.exists(up) and os.path.dirname(up) != up:
        missing.append(up)
        up = os.path.dirname(up)
    os.makedirs(parent, exist_ok=True)
    clean_stale(out_dir)
    tmp = tempfile.mkdtemp(prefix=f".{base}.tmp-", dir=parent)
    os.chmod(tmp, 0o755)
    _hold(tmp)
    _made[os.path.abspath(tmp)] = missing
    return tmp


def discard_temp_folder(tmp):
    """Cleans up after a generation that did not install its temporary folder (an error):
    removes the folder and the parent folders make_temp_folder created for it, if empty.
    Harmless after a successful install_folder."""
    tmp = os.path.abspath(tmp)
    _release(tmp)
    made = _made.pop(tmp, [])
    if os.path.isdir(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
        for folder in made:               # deepest first
            try:
                os.rmdir(folder)
            except OSError:
                break


def _recover(out_dir):
    """Under the parent's lock: repairs what a run killed in the middle of an install left."""
    out_dir, parent, base = _parts(out_dir)
    olds = _siblings(parent, base, "old")
    if not olds:
        return
    if not os.path.lexists(out_dir):
        # killed between `out -> old` and `tmp -> out`: the newest old folder is the result
        olds.sort(key=lambda p: os.lstat(p).st_mtime)
        for cand in reversed(olds):
            if os.path.isfile(os.path.join(cand, "scleron.json")):
                os.rename(cand, out_dir)
                olds.remove(cand)
                break
    for old in olds:              # killed before the old folder was removed
        shutil.rmtree(old, ignore_errors=True)


def _fsync_tree(folder):
    for root, _, files in os.walk(folder):
        for f in files:
            _fsync_path(os.path.join(root, f))
    _fsync_path(folder)


def _fsync_path(path):
    """fsync one file or folder, ignoring what cannot be opened or synced."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def install_folder(tmp, out_dir):
    """Moves a finished folder into place: the old folder is renamed aside, the new one renamed
    in, the old one removed, all under the parent directory's lock. A reader that takes the
    lock (load_package) sees the old or the new folder, never a mixture or none."""
    out_dir, parent, base = _parts(out_dir)
    tmp = os.path.abspath(tmp)
    _fsync_tree(tmp)
    try:
        with _dir_lock(parent):
            _recover(out_dir)
            _check_replaceable(out_dir)
            old = None
            if os.path.lexists(out_dir):
                old = os.path.join(parent, f".{base}.old-{uuid.uuid4().hex[:8]}")
                os.rename(out_dir, old)
            try:
                os.rename(tmp, out_dir)
            except OSError:
                if old is not None:
                    os.rename(old, out_dir)      # put the previous result back
                raise
            _made.pop(tmp, None)                 # installed: its parents are the result's
            _fsync_path(parent)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
    finally:
        _release(tmp)


# ---- loading ---------------------------------------------------------------------------------
def _compiled(folder, meta):
    module = f"_{meta['name']}_{meta['hash'][:12]}"
    return (glob.glob(os.path.join(glob.escape(folder), module + ".*.so"))
            + glob.glob(os.path.join(glob.escape(folder), module + ".*.pyd")))


def load_package(folder):
    """Imports a generated folder as a package (a fresh module object each time).

    Compiles it first when its compiled module is missing (a folder written with
    --no-compile), with the same clear errors as a generation."""
    folder = os.path.abspath(folder)
    parent = os.path.dirname(folder)
    with _dir_lock(parent):
        _recover(folder)
        init = os.path.join(folder, "__init__.py")
        if not os.path.isfile(init):
            raise FileNotFoundError(f"{folder} is not a generated scleron folder (no __init__.py)")
        try:
            with open(os.path.join(folder, "scleron.json")) as fh:
                meta = json.load(fh)
            name, _ = meta["name"], meta["hash"]
        except (OSError, ValueError, KeyError, TypeError):
            meta = None
        if meta is not None and not _compiled(folder, meta):
            compile_folder(folder, name)
        modname = f"scleron_generated_{os.path.basename(folder)}_{uuid.uuid4().hex[:8]}"
        spec = importlib.util.spec_from_file_location(modname, init, submodule_search_locations=[folder])
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            sys.modules.pop(modname, None)
            raise
        return mod
