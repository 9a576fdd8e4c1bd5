"""Files the tools write (a trajectory, a plot, a picture): whole or not at all.

Each file is written to a new file beside its destination (through a symbolic link: beside the
file the link names, so the link stays) and renamed into place once every file of the call is
written; a file that was there keeps its permissions. The temporary names start with
".scleron-", and an error or Ctrl-C removes them.
"""
import contextlib
import os
import secrets
import stat


def writable_formats(canvas):
    """The file formats a matplotlib canvas writes here: .pgf only where its TeX system
    (rcParams["pgf.texsystem"], xelatex by default) is installed (without it a whole simulation
    ran, then failed in savefig)."""
    import shutil

    import matplotlib
    formats = set(canvas.get_supported_filetypes())
    if not shutil.which(matplotlib.rcParams.get("pgf.texsystem", "xelatex")):
        formats.discard("pgf")
    return formats


def format_problem(path, ext, formats):
    """Why path cannot be written as .ext (None where it can)."""
    if ext in formats:
        return None
    if ext == "pgf":
        import matplotlib
        tex = matplotlib.rcParams.get("pgf.texsystem", "xelatex")
        return (f"{path}: matplotlib writes .pgf files through a TeX system ({tex}), which is not "
                f"installed (use one of: {', '.join(sorted(formats))})")
    return (f"{path}: matplotlib cannot write .{ext} files "
            f"(use one of: {', '.join(sorted(formats))})")


def destination_problem(path):
    """Why a file cannot be written at path, a name of what is there now (None where it can):
    a pipe, a device or a socket, also through a symbolic link, is never replaced by a file (a
    link to /dev/full became a regular file: the device node was gone)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None                 # nothing there (yet), or a dangling link: a new file
    if stat.S_ISDIR(mode):
        return "is a folder: give a file name"
    if not stat.S_ISREG(mode):
        kind = ("a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "no regular file")
        return f"is {kind}, not a file: scleron writes whole files only, give a file name"
    return None


def write_all(jobs):
    """jobs: (what, path, write) triples; write(tmp) writes the file at tmp (its extension is the
    destination's). Either every path is written or none is; a ValueError names what and path."""
    jobs = [(what, os.path.realpath(path), path, write) for what, path, write in jobs]
    for what, real, path, _ in jobs:
        problem = destination_problem(real)
        if problem:
            raise ValueError(f"{what} {path} {problem}")
    written = []
    try:
        for what, real, path, write in jobs:
            try:
                tmp = new_file_beside(real)
                written.append((tmp, real))
                write(tmp)
                if os.path.exists(real):
                    os.chmod(tmp, stat.S_IMODE(os.stat(real).st_mode))
            except OSError as exc:
                raise ValueError(f"{what} {path}: {exc.strerror or exc}") from None
        for (tmp, real), (what, _, path, _) in zip(written, jobs):
            try:
                os.replace(tmp, real)
            except OSError as exc:
                raise ValueError(f"{what} {path}: {exc.strerror or exc}") from None
        written = []
    finally:
        for tmp, _ in written:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def new_file_beside(path):
    """A new empty file in path's folder with path's extension (matplotlib reads the format
    from it), created with the process's umask applied (os.open's mode 0o666)."""
    folder, ext = os.path.dirname(path), os.path.splitext(path)[1]
    while True:
        tmp = os.path.join(folder, f".scleron-{secrets.token_hex(6)}{ext}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


def literal_text():
    """matplotlib's settings under which every text is drawn as written: a $ in a model's name
    ('$\\undefinedcmd$' is a valid joint name) is no math markup, whose parse error lost a
    whole run's plot and trajectory."""
    import matplotlib
    return matplotlib.rc_context({"text.parse_math": False, "text.usetex": False})
