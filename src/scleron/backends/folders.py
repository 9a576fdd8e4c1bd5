"""Output folders, written atomically and safely under concurrency (every backend uses these).

- Generated output is never half-written. Generation writes into a hidden sibling of the
  output folder, `.NAME.tmp-XXXXXXXX`, and renames it into place; the previous folder is
  renamed aside first and removed afterwards. A reader sees the old folder or the new one.
- Concurrent runs are clean. Installing and loading hold an exclusive flock on the output
  folder's parent directory (a lock on the directory itself: no lock file is written), so two
  processes installing into one folder take turns; the last one wins and both results are
  valid. Loading under the same lock never sees a folder in the middle of a swap. A load that
  must compile the folder first (written with --no-compile, or compiled for another Python or
  CPU) holds the folder itself instead while it compiles, so that its siblings wait for nothing;
  an install into that folder waits for the compile before it moves the folder aside.
- An interrupted run loses nothing. A process killed mid-build leaves only its temporary
  folder. Each builder holds a shared flock on its temporary folder and writes its pid and
  host into it (OWNER_FILE, removed before the install); the next run removes a folder no
  living process holds at once when its owner is a dead process of this host, and otherwise
  (no owner file, another host) once it is STALE_AFTER seconds old. A process killed between
  the two renames of an install leaves the previous folder under `.NAME.old-*`; the next
  install or load renames it back.
- An existing output folder is only ever replaced when it is empty or a scleron output folder
  (it has a scleron.json) holding nothing scleron did not write: `-o ~/Documents` is refused,
  not deleted, and so is a generated folder the user has put a model file or notes into.
"""
import fnmatch
import glob
import hashlib
import json
import os
import shutil
import socket
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
OWNER_FILE = ".scleron-owner"    # in a temporary folder: "PID HOST" of the process building there
_held = {}                       # temporary folder -> fd holding a shared flock on it
_made = {}                       # temporary folder -> parent folders created for it


# ---- locks -----------------------------------------------------------------------------------
@contextmanager
def dir_lock(path):
    """An exclusive flock on a directory (a no-op where flock is unavailable)."""
    fd = None
    if fcntl is not None:
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # (never a FIFO's wait)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            if fd is not None:
                os.close(fd)
            fd = None
    try:
        yield fd
    finally:
        if fd is not None:
            os.close(fd)          # releases the lock


def is_temp_folder(folder):
    """Whether a folder is one of this process's make_temp_folder folders (held or made)."""
    return folder in _made or folder in _held


def still_there(fd, path):
    """Whether the directory a lock's fd holds is still the one at path (an install may have
    moved it aside while this process waited for its lock); True where there is no lock."""
    if fd is None:
        return True
    try:
        a, b = os.fstat(fd), os.stat(path)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


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


def _stem(base):
    """The output folder's name as its hidden siblings (.NAME.tmp-*, .NAME.old-*) carry it: a
    long name (past 200 characters) cut and marked by a hash, so that a sibling's name stays
    within the 255 a file system allows (an output folder of 242-255 characters was refused)."""
    if len(base) <= 200:
        return base
    return (f"{base[:180]}~"
            f"{hashlib.sha256(base.encode('utf-8', 'surrogateescape')).hexdigest()[:12]}")


def _siblings(parent, base, kind):
    return sorted(glob.glob(os.path.join(glob.escape(parent),
                                         f".{glob.escape(_stem(base))}.{kind}-*")))


def is_output_folder(path):
    """An empty folder or a scleron output folder (its scleron.json is scleron's: record)."""
    return os.path.isdir(path) and not os.path.islink(path) and (
        not os.listdir(path) or record(path) is not None)


def record(folder):
    """The folder's scleron.json where it is one scleron wrote (a JSON object with the "hash"
    and "scleron_version" every scleron has written), else None (none, or a file of that name
    of the user's own)."""
    try:
        with open(os.path.join(folder, "scleron.json")) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and {"hash", "scleron_version"} <= set(data) else None


# the path (from the folder) and SHA-256 of the model file a folder was generated from, which its
# package compares on import (record_model_file)
MODEL_FILE_RECORD = "model_file.json"
# the model's initial state, which the package's initial_state() reads: not part of the code (a
# changed `initial:` needs no new generation), written with each generation and cache hit
INITIAL_STATE_RECORD = "initial_state.json"


def _write_record(folder, key, name, text):
    """Writes (text None: removes) the record `name` of the folder, only while the folder holds
    the generation `key` (under the parent's lock: a concurrent codegen of another model may
    replace it); atomically, through a temporary file. Quietly nothing in a read-only folder."""
    record = os.path.join(folder, name)
    try:
        with dir_lock(os.path.dirname(os.path.abspath(folder))):
            with open(os.path.join(folder, "scleron.json")) as fh:
                if json.load(fh).get("hash") != key:
                    return          # another generation is there now: its record is its own
            if text is None:
                if os.path.exists(record):
                    os.remove(record)
                return
            tmp = f"{record}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                fh.write(text)
            os.replace(tmp, record)
    except (OSError, ValueError, AttributeError):
        pass                # (a read-only folder: the package then only cannot warn, and
                            # initial_state() gives the neutral q)


def record_initial_state(folder, key, q, qd):
    """Writes the folder's INITIAL_STATE_RECORD, {"hash": key, "q": [...], "qd": [...]}, while
    the folder holds the generation `key` (the package's initial_state() takes only its own)."""
    text = json.dumps({"hash": key, "q": [float(x) for x in q],
                       "qd": [float(x) for x in qd]}) + "\n"
    _write_record(folder, key, INITIAL_STATE_RECORD, text)


def record_model_file(folder, model_file, key, relative_to=None, included=(), digests=None):
    """Writes (or, for a model not read from a file, removes) the folder's MODEL_FILE_RECORD:
    the model file's path relative to the folder (relative_to: the folder a build folder
    becomes) and the SHA-256 of its bytes, and the same of each file it included ("also": an
    MJCF's <include>s); only while the folder holds the generation `key`. digests: {absolute
    path: SHA-256} of the files as they were read (load_model's file_digests), where given: a
    file edited while the code was made then differs from its record, and the import warns."""
    where = os.path.abspath(relative_to or folder)

    def entry(path):
        digest = (digests or {}).get(os.path.abspath(path))
        if digest is None:
            with open(path, "rb") as fh:
                digest = hashlib.sha256(fh.read()).hexdigest()
        return {"path": os.path.relpath(os.path.abspath(path), where), "sha256": digest}
    text = None
    try:
        if model_file is not None and os.path.isfile(model_file):
            record_data = entry(model_file)
            if included:
                record_data["also"] = [entry(p) for p in included]
            text = json.dumps(record_data, indent=1) + "\n"
    except OSError:
        return              # (a file that cannot be read now: no record, as before)
    _write_record(folder, key, MODEL_FILE_RECORD, text)


# what a build leaves in an output folder besides scleron.json and its sources: the compiled
# modules, Python's bytecode, the CUDA build's resource report, and the logs and build folders
# of a compile in progress (on import, or killed)
BUILD_PRODUCTS = ("*.so", "*.pyd", "*.dll", "*.target.json", "__pycache__", "*_cuda_resources.txt",
                  "build.log", "build_cuda.log", "_build-*", ".build-*",
                  MODEL_FILE_RECORD + ".*.tmp", INITIAL_STATE_RECORD + ".*.tmp")


def written_sources(folder):
    """The "sources" of a folder's scleron record (name -> sha256 of each file scleron wrote), or
    None where the record has none (a scleron before 2026-11-23)."""
    sources = (record(folder) or {}).get("sources")
    return sources if isinstance(sources, dict) else None


def foreign_entries(folder, sources):
    """The entries of a scleron output folder that scleron did not write (not scleron.json, one
    of its `sources` (written_sources; None: none known), or a BUILD_PRODUCTS name): a user's
    notes, data, model file or .git, which replacing the folder would delete."""
    ours = {"scleron.json", MODEL_FILE_RECORD, INITIAL_STATE_RECORD, *(sources or ())}
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    return sorted(n for n in names if n not in ours
                  and not any(fnmatch.fnmatch(n, pattern) for pattern in BUILD_PRODUCTS))


def _check_replaceable(out_dir):
    if not os.path.lexists(out_dir):
        return
    if os.path.islink(out_dir):
        raise BuildError(f"{out_dir} is a symbolic link (to {os.readlink(out_dir)}): scleron "
                         "replaces its output folder by renaming, which would replace the link; "
                         "give the folder it points to")
    if not is_output_folder(out_dir):
        what = "a folder" if os.path.isdir(out_dir) else "a file"
        inside = (f" (a new one inside it, such as {os.path.join(out_dir, 'NAME')}, is fine)"
                  if what == "a folder" else "")
        raise BuildError(f"{out_dir} exists and is {what} that scleron did not write (no "
                         "scleron.json of scleron's): refusing to replace it; choose another "
                         "output folder" + inside)
    sources = written_sources(out_dir)
    foreign = foreign_entries(out_dir, sources)
    if not foreign:
        return
    shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
    if sources is None:         # (a scleron.json that lists nothing: all but it may be the user's)
        raise BuildError(f"{out_dir} has a scleron.json that does not list the files scleron "
                         f"wrote, so {shown} may be yours: refusing to replace the folder; "
                         "remove it yourself if it is an old generated folder, or choose "
                         "another output folder")
    raise BuildError(f"{out_dir} holds files scleron did not write ({shown}): replacing the "
                     "folder would delete them; move them elsewhere, or choose another "
                     "output folder")


def _write_owner(folder):
    """Records this process as the folder's builder (without it, the age rule still applies)."""
    try:
        with open(os.path.join(folder, OWNER_FILE), "w") as fh:
            fh.write(f"{os.getpid()} {socket.gethostname()}\n")
    except OSError:
        pass


def _owner_is_dead(folder):
    """True when the folder's owner file names a process of this host that no longer exists
    (a run killed with kill -9, or a crash); False when it lives, or cannot be told."""
    try:
        with open(os.path.join(folder, OWNER_FILE)) as fh:
            pid, host = fh.read().split()
        pid = int(pid)
    except (OSError, ValueError):
        return False
    if os.name != "posix" or pid <= 0 or host != socket.gethostname():
        return False
    try:
        os.kill(pid, 0)                  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except OSError:                      # it exists (another user's process)
        return False
    return False


def _is_debris(path, age, max_age):
    if path in _held or not os.path.isdir(path) or not _unheld(path):
        return False
    return _owner_is_dead(path) or age > max_age


def clean_stale(out_dir, max_age=STALE_AFTER):
    """Removes leftover `.NAME.tmp-*` folders of killed runs, held by no process: at once when
    their owner process is dead, otherwise once older than max_age seconds; and the build
    folders a killed compile left inside out_dir, once older than max_age. Returns the removed
    paths."""
    out_dir, parent, base = _parts(out_dir)
    # inside: the build folders of a compile on import that was killed (no owner file: the
    # age rule alone)
    inside = [path for pattern in ("_build-*", ".build-*")
              for path in glob.glob(os.path.join(glob.escape(out_dir), pattern))]
    removed = []
    now = time.time()
    for path in _siblings(parent, base, "tmp") + inside:
        try:
            age = now - os.lstat(path).st_mtime
        except OSError:
            continue
        if _is_debris(path, age, max_age):
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
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise BuildError(f"{out_dir}: cannot create the folder {parent} "
                         f"({_blocking_file(parent) or e.strerror or e})") from None
    clean_stale(out_dir)
    try:
        tmp = tempfile.mkdtemp(prefix=f".{_stem(base)}.tmp-", dir=parent)
    except OSError as e:
        raise BuildError(f"{out_dir}: cannot write into {parent} ({e.strerror or e})") from None
    os.chmod(tmp, 0o755)
    _hold(tmp)
    _write_owner(tmp)
    _made[os.path.abspath(tmp)] = missing
    return tmp


def _blocking_file(path):
    """The first component of path that exists and is not a folder, described, or None."""
    up = path
    while up and os.path.dirname(up) != up:
        if os.path.lexists(up) and not os.path.isdir(up):
            return f"{up} is a file"
        up = os.path.dirname(up)
    return None


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


def recover_locked(out_dir):
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


def recover(out_dir):
    """recover_locked under the parent's lock, before a cache check (an install killed between
    its renames left the previous folder aside: found, it needs no new generation); nothing where
    the parent does not exist or cannot be locked."""
    parent = os.path.dirname(os.path.abspath(out_dir))
    if not os.path.isdir(parent):
        return
    try:
        with dir_lock(parent):
            recover_locked(out_dir)
    except OSError:
        pass


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
    try:
        os.remove(os.path.join(tmp, OWNER_FILE))    # the result is not a build in progress
    except FileNotFoundError:
        pass
    _fsync_tree(tmp)
    try:
        # the folder's own lock first: a load compiling in it finishes before the folder moves,
        # and the parent's lock (which every load and install beside it takes) is not held
        # while waiting for that (its siblings waited out the whole compile)
        while True:
            with dir_lock(out_dir) as held, dir_lock(parent):
                if not still_there(held, out_dir) and os.path.lexists(out_dir):
                    continue                    # replaced while this one waited: lock the new one
                _install_locked(tmp, out_dir, parent, base)
                break
    finally:
        _release(tmp)


def _install_locked(tmp, out_dir, parent, base):
    """install_folder's renames, under the folder's and the parent's locks."""
    recover_locked(out_dir)
    _check_replaceable(out_dir)
    old = None
    if os.path.lexists(out_dir):
        old = os.path.join(parent, f".{_stem(base)}.old-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(out_dir, old)
        except OSError as e:             # (an immutable folder: chattr +i)
            raise BuildError(f"{out_dir}: cannot replace the folder ({e.strerror or e}): the "
                             "new result is put in its place by a rename, which this folder "
                             "refuses") from None
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


def edited_sources(folder, meta):
    """The generated files of a folder whose text is not what scleron wrote (their sha256 in
    scleron.json's "sources", meta), or that are missing: hand edits the cache must not serve."""
    out = []
    for fname, digest in sorted((meta.get("sources") or {}).items()):
        try:
            with open(os.path.join(folder, fname), "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() == digest:
                    continue
        except OSError:
            pass
        out.append(fname)
    return out
