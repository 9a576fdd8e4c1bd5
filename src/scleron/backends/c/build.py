"""Compiling a generated C folder with cffi and loading it back (the C backend's build).

- The C compiler runs in a child process. Its full output goes to a build.log; a missing
  compiler or a compiler error is one BuildError line that says what to install or where the
  log is (the log of a failed build is kept in the system temporary folder, because the
  failed build folder itself is removed).
- The compilers die with the run. On POSIX the child is a process group of its own (every
  gcc it starts, cffi's included, belongs to it): an exception or Ctrl-C in this process
  kills the group, and when this process dies outright (kill -9) a watchdog thread in the
  child sees its parent gone within WATCH_EVERY seconds and kills the group itself.
- progress (a callable taking one line of text, optional) hears when compiling starts, when
  each part of the C code has been compiled, and when the module is linked.
- Loading takes the output folder's lock (scleron.backends.folders), so it never sees a
  folder in the middle of an install, and compiles a folder written without its binary.
"""
import glob
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import uuid
import warnings

from ...errors import BuildError, ForeignTargetError
from ..folders import (dir_lock, discard_temp_folder, edited_sources, is_temp_folder,
                       recover_locked, still_there)
INSTALL_HINT = ("install one, e.g. `apt-get install gcc` (Debian/Ubuntu), `dnf install gcc` "
                "(Fedora), `xcode-select --install` (macOS), or set CC to a C compiler")

WATCH_EVERY = 0.2                # seconds between the child's looks at whether its parent lives

# Runs in the child process: imports the folder's build script and compiles into a temporary
# build folder; the last line of its output names the compiled module. argv[3] is the parent's
# pid: once the parent is gone, the child kills its process group (itself and its compilers).
_CHILD = """\
import importlib.util, os, signal, sys, threading, time

def watch(parent):
    while os.getppid() == parent:
        time.sleep(%(every)r)
    os.killpg(0, signal.SIGKILL)

if os.name == "posix":
    threading.Thread(target=watch, args=(int(sys.argv[3]),), daemon=True).start()
spec = importlib.util.spec_from_file_location("_scleron_build", sys.argv[1])
builder = importlib.util.module_from_spec(spec)
spec.loader.exec_module(builder)
built = builder.build(tmpdir=sys.argv[2], verbose=True)
print("SCLERON_BUILT=" + built)
""" % {"every": WATCH_EVERY}


# ---- the C compiler ----------------------------------------------------------------------------
def find_c_compiler(environ=None):
    """(compiler command, environment overrides) that the build script (build_NAME.py,
    its compiler()) will use, or a BuildError.

    The build script runs $CC when it is set, otherwise the compiler Python was built with
    (sysconfig CC, usually gcc). When that one is missing but cc, gcc or clang is on PATH, the
    override {"CC": that} makes the build script use it.
    """
    env = os.environ if environ is None else environ
    if os.name == "nt":          # no sysconfig CC there: the build script's own error tells
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


def march_problem(march):
    """What this machine's C compiler says of -march=<march> ("" where it takes it, or where
    there is no compiler to ask): a folder written with --no-compile for it compiles only where
    a compiler knows that CPU (another architecture's name, armv8-a on x86, is such a case)."""
    try:
        cc, overrides = find_c_compiler()
    except BuildError:
        return ""
    if cc is None:
        return ""
    try:
        r = subprocess.run(shlex.split(cc) + [f"-march={march}", "-x", "c", "-E", "-o", os.devnull,
                                              os.devnull], capture_output=True, text=True,
                           timeout=60, env={**os.environ, **overrides})
    except (OSError, subprocess.SubprocessError):
        return ""
    return "" if r.returncode == 0 else f"{cc}: {first_error(r.stderr) or 'refused'}"


def first_error(log_text):
    """The most telling line of a compiler log, for a one-line message."""
    lines = [ln.strip() for ln in log_text.splitlines() if ln.strip()]
    for pattern in (*OUT_OF_SPACE, "Python.h", "fatal error", "error:", "Error:", "error",
                    "Error"):
        for ln in lines:
            if pattern in ln and not ln.startswith("SCLERON_BUILT="):
                return ln
    return lines[-1] if lines else "no output"


# what a full disk leaves in a compiler's log (a later step then misses the file it could not
# write, and said only that: an outside tester, on a 400 kB file system)
OUT_OF_SPACE = ("No space left on device", "Disk quota exceeded")


def _hint(log_text):
    if any(text in log_text for text in OUT_OF_SPACE):
        return "the disk holding the output folder is full: free some space there, or generate " \
               "into a folder on another disk (scleron codegen MODEL -o DIR)"
    if "Python.h" in log_text:
        return ("the Python development headers are missing: install them (e.g. `apt-get install "
                "python3-dev`)")
    if "cffi" in log_text and ("No module named" in log_text or "ModuleNotFoundError" in log_text):
        return "cffi is missing: `pip install cffi`"
    if "command" in log_text and "failed: No such file or directory" in log_text:
        return f"the C compiler could not be run: {INSTALL_HINT}"
    return None


def short_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def compile_folder(folder, name, progress=None):
    """Compiles the folder's C code with its cffi build script (build_NAME.py) in a child
    process; the compiled module lands in the folder. Returns its path.

    The child's full output (the compiler's commands and messages) is written to
    folder/build.log while it runs; on failure it is copied to the system temporary folder
    and the BuildError names that copy. On success the log is removed. progress: see the
    module docstring.
    """
    folder = os.path.abspath(folder)
    try:
        return _compile(folder, name, progress or _silent)
    except BaseException:
        if is_temp_folder(folder):     # a make_temp_folder folder: nothing to keep
            discard_temp_folder(folder)
        raise


def _silent(message):
    pass


def _start_child(script, build_dir, folder, env, log):
    """The build's child process, in a process group of its own on POSIX."""
    env = dict(env, SCLERON_BUILD_CHILD="1")     # (its compilers stay in its group: own_groups)
    return subprocess.Popen([sys.executable, "-c", _CHILD, script, build_dir, str(os.getpid())],
                            cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=os.name == "posix")


def _kill_child(proc):
    """Kills the child and every compiler it started (its process group)."""
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except OSError:              # already gone
        pass
    proc.wait()


def _parallel_jobs(env):
    """$SCLERON_BUILD_JOBS (compiles at once; default one per core), checked before any build
    as the build script checks it."""
    text = env.get("SCLERON_BUILD_JOBS", "").strip()
    if not text.isdigit() and text:
        raise BuildError(f"SCLERON_BUILD_JOBS must be a whole number of compiles at once (0: "
                         f"one per core), got {text!r}")
    return int(text or 0) or os.cpu_count() or 1


def _wait_for_child(proc, build_dir, name, progress):
    """Waits for the build's child, telling progress which parts of the C code are compiled
    (their object files appear in build_dir) and when the module is linked."""
    parts, linking = set(), False
    while True:
        try:
            return proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            pass
        for obj in sorted(glob.glob(os.path.join(glob.escape(build_dir), f"{name}_part*.o"))):
            if obj not in parts:
                parts.add(obj)
                progress(f"compile: {len(parts)} part{'s' if len(parts) > 1 else ''} of the C "
                         "code compiled")
        if not linking and glob.glob(os.path.join(glob.escape(build_dir), f"{name}_python.o")):
            linking = True
            progress("compile: linking the module and its fast extension")


def run_child(script, build_dir, folder, env, log, name, progress):
    proc = _start_child(script, build_dir, folder, env, log)
    try:
        return _wait_for_child(proc, build_dir, name, progress)
    except BaseException:        # Ctrl-C, an error: no compiler outlives the run
        _kill_child(proc)
        raise


def _compile(folder, name, progress):
    script = os.path.join(folder, f"build_{name}.py")
    if not os.path.isfile(script):
        raise BuildError(f"{folder} has no build script build_{name}.py")
    cc, overrides = find_c_compiler()
    env = dict(os.environ, **overrides)
    jobs = _parallel_jobs(env)
    try:
        build_dir = tempfile.mkdtemp(prefix="_build-", dir=folder)
    except OSError as e:
        raise BuildError(f"{folder} has no compiled module of {name} for this Python and CPU, "
                         "and it cannot be compiled "
                         f"there ({e.strerror or e}): generate it into a folder you can write "
                         "(scleron codegen MODEL -o DIR), or compile it where it is "
                         "writable") from None
    log_path = os.path.join(folder, "build.log")
    try:
        with open(log_path, "w") as log:
            log.write(f"# scleron: compiling {name} in {folder}\n")
            log.flush()
            progress(f"compile: {name}'s C code with {cc or 'the C compiler'}, in up to "
                     f"{jobs} parts at once")
            returncode = run_child(script, build_dir, folder, env, log, name, progress)
        with open(log_path, errors="replace") as fh:
            text = fh.read()
        built = [ln[len("SCLERON_BUILT="):] for ln in text.splitlines()
                 if ln.startswith("SCLERON_BUILT=")]
        if returncode != 0 or not built or not os.path.isfile(built[-1]):
            kept = keep_log(log_path, name)
            os.remove(log_path)
            hint = _hint(text)
            raise BuildError(f"compiling {name} failed: {short_line(first_error(text))}"
                             + (f"; {hint}" if hint else "")
                             + f"; full compiler output in {kept}")
        target = os.path.join(folder, os.path.basename(built[-1]))
        os.replace(built[-1], target)
        os.remove(log_path)
        return target
    finally:
        shutil.rmtree(build_dir, ignore_errors=True)


def keep_log(log_path, name):
    """A copy of a failed build's log that outlives the build folder."""
    fd, kept = tempfile.mkstemp(prefix=f"scleron-{name}-", suffix=".build.log")
    with os.fdopen(fd, "wb") as out, open(log_path, "rb") as src:
        shutil.copyfileobj(src, out)
    return kept


# ---- loading ---------------------------------------------------------------------------------
def _target(folder, meta):
    """The folder's NAME_target.py as a module (which compiled modules this Python may load on
    this CPU), or None where it has none that loads."""
    script = os.path.join(folder, f"{meta['name']}_target.py")
    try:
        spec = importlib.util.spec_from_file_location(f"_scleron_target_{uuid.uuid4().hex[:8]}",
                                                      script)
        target = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(target)
    except Exception:               # missing, or edited into something that fails
        return None
    usable = all(callable(getattr(target, f, None))
                 for f in ("problem", "compiling_helps", "modules"))
    return target if usable else None


def _compiled(folder, meta):
    """The folder's compiled modules this Python may load on this CPU (NAME_target.py: those
    its record names, built for this Python and for a CPU with this one's instructions)."""
    target = _target(folder, meta)
    if target is None or target.problem():
        return []
    return [p for p in target.modules() if p]


def _edits_in_module(folder, meta, edited):
    """Whether the compiled module loaded holds the edits, by modification times: compiled
    after the last edit (`python build_NAME.py` by hand), or before it."""
    def mtime(path):
        try:
            return os.stat(path).st_mtime_ns
        except OSError:
            return 0
    built = max(mtime(p) for p in _compiled(folder, meta))
    if built > max(mtime(os.path.join(folder, f)) for f in edited):
        return "the compiled module loaded was compiled after the last edit (by hand?) and holds it"
    return "the compiled module loaded is older than the edits and does not hold them"


def _checked_meta(folder, expect):
    """The folder's scleron.json, after the checks of a load; under the parent's lock."""
    recover_locked(folder)
    init = os.path.join(folder, "__init__.py")
    if not os.path.isfile(init):
        raise FileNotFoundError(f"{folder} is not a generated scleron folder (no __init__.py)")
    try:
        with open(os.path.join(folder, "scleron.json")) as fh:
            meta = json.load(fh)
        meta["name"], meta["hash"]
    except (OSError, ValueError, KeyError, TypeError):
        raise BuildError(f"{folder}: its scleron.json is missing or does not read: regenerate "
                         "the folder with `scleron codegen --force`") from None
    if expect is not None and (meta or {}).get("hash") != expect:
        raise BuildError(f"{folder} was replaced by another generation while this one ran "
                         "(two generations into one folder at once; the last one stays): "
                         "run again, or give each model its own folder")
    edited = edited_sources(folder, meta) if meta is not None else []
    if edited and not _compiled(folder, meta):
        raise BuildError(f"{folder}: {', '.join(edited)} "
                         f"{'differs' if len(edited) == 1 else 'differ'} from what scleron "
                         "generated (edited by hand?) and there is no compiled module for them: "
                         "regenerate with `scleron codegen --force`, or remove \"sources\" "
                         "from scleron.json to compile the edited files on purpose")
    return meta


def _compile_in_place(folder, meta):
    """Compiles a folder that has no module for this Python and CPU, holding the folder itself
    (an install into it waits; its siblings do not: the parent's lock was held for the whole
    compile, and every codegen beside it waited minutes without a word). Whether it compiled
    (not where the folder was replaced or compiled by another process meanwhile)."""
    with dir_lock(folder) as held:
        if not still_there(held, folder):
            return False                            # replaced meanwhile: the caller looks again
        try:
            with open(os.path.join(folder, "scleron.json")) as fh:
                same = json.load(fh).get("hash") == meta["hash"]
        except (OSError, ValueError, AttributeError):
            same = False
        if same and not _compiled(folder, meta):    # (else replaced, or compiled meanwhile)
            compile_folder(folder, meta["name"])
            return True
        return False


def load_package(folder, expect=None):
    """Imports a generated folder as a package (the same module object while its files are).

    Compiles it first when it has no compiled module for this Python and CPU (a folder written
    with --no-compile, or compiled elsewhere), with the same clear errors as a generation: the
    compile holds the folder's lock, the check and the import its parent's, never both at once
    (an install takes them in that order). expect: the generation's hash the caller has just
    installed; a BuildError if the folder holds another (a concurrent codegen of another model
    or options replaced it meanwhile)."""
    folder = os.path.abspath(folder)
    parent = os.path.dirname(folder)
    compiled_here = False
    for _ in range(10):                         # (each round: compiled, replaced or loaded)
        with dir_lock(parent):
            meta = _checked_meta(folder, expect)
            why = _unloadable(folder, meta)
            if why is None:
                return _import(folder, meta)
        if compiled_here or not why[1]:        # compiled, and still not for this CPU
            error = ForeignTargetError if why[2] and not why[1] else BuildError
            raise error(f"{folder}: {why[0]}" + (" (after compiling it here)" if why[1] else
                        ": it does not run here; the folder is written, for a machine that "
                        "can run it (for this one: `scleron codegen --march native`)"))
        compiled_here = _compile_in_place(folder, meta)
        expect = meta["hash"]
    raise BuildError(f"{folder}: changed while it was loaded, again and again: load it again")


def _unloadable(folder, meta):
    """None where the folder has modules this Python may load on this CPU, else (why, whether
    compiling helps, whether it was built for another CPU on purpose); a BuildError for a folder
    an older scleron wrote (no NAME_target.py)."""
    target = _target(folder, meta)
    if target is None:
        raise BuildError(f"{folder}: {meta['name']}_target.py is missing or does not load (a "
                         "folder of an older scleron, or edited): regenerate it with `scleron "
                         "codegen --force`")
    why = target.problem()
    return None if why is None else (why, target.compiling_helps(),
                                     getattr(target, "built_for_another_cpu", bool)())


# (folder, its files' names, sizes and times) -> the module _import made of it: loading an
# unchanged folder again gives that module, not one more copy (each stayed in sys.modules: 300
# loads of one folder kept 300 modules, 87 MB, an outside tester)
_LOADED = {}


# what generate() rewrites on a cache hit: the record of the model file, which the module reads
# only for its staleness warning (said again on each load), and the initial state, which
# initial_state() reads when called
NOT_CODE = ("model_file.json", "initial_state.json")


def _folder_identity(folder):
    with os.scandir(folder) as entries:
        return (folder,) + tuple(sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns)
                                        for e in entries if e.is_file() and e.name not in NOT_CODE))


def _import(folder, meta):
    """Runs the folder's __init__.py as a module (under the parent's lock: it must not compile,
    its modules are there); the module of an earlier load where the folder's files are the
    same."""
    edited = edited_sources(folder, meta) if meta is not None else []
    identity = _folder_identity(folder)
    earlier = sys.modules.get(_LOADED.get(identity, ""))
    if earlier is not None and not edited:
        getattr(earlier, "_warn_if_the_model_file_changed", lambda: None)()   # (as on import)
        return earlier
    if edited:
        warnings.warn(f"{folder}: {', '.join(edited)} "
                      f"{'differs' if len(edited) == 1 else 'differ'} from what scleron generated; "
                      + _edits_in_module(folder, meta, edited)
                      + " (regenerate with `scleron codegen --force`)", stacklevel=4)
    modname = f"scleron_generated_{os.path.basename(folder)}_{uuid.uuid4().hex[:8]}"
    init = os.path.join(folder, "__init__.py")
    spec = importlib.util.spec_from_file_location(modname, init,
                                                  submodule_search_locations=[folder])
    spec.loader_state = "scleron: no compile"      # (__init__ raises where it would compile)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[modname] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        sys.modules.pop(modname, None)
        raise
    _LOADED[identity] = modname
    return mod
