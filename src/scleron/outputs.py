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

# formats matplotlib lists but writes only through a TeX installation: refused before the work
# (.pgf ran a whole simulation, then failed for want of xelatex)
NEEDS_TEX = {"pgf"}

def write_all(jobs):
    """jobs: (what, path, write) triples; write(tmp) writes the file at tmp (its extension is the
    destination's). Either every path is written or none is; a ValueError names what and path."""
    jobs = [(what, os.path.realpath(path), path, write) for what, path, write in jobs]
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
