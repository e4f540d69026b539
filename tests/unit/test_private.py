"""gpu/private.py: which folders and files count as this user's own and private, walked
component by component (links followed one at a time, each checked), as ssh checks a key."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gpuoverhead.gpu import private

pytestmark = pytest.mark.skipif(not private.checked(), reason="POSIX owners and modes")


def _chown_to_another(path: Path) -> None:
    """`path` given to another user (root only: elsewhere the test skips, saying why)."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    os.chown(path, 65534, 65534, follow_symlinks=False)


def test_a_missing_folder_is_made_private_with_its_parents(tmp_path):
    folder = tmp_path / "a" / "b" / "c"
    assert private.folder(folder) == folder
    for made in (tmp_path / "a", tmp_path / "a" / "b", folder):
        assert stat.S_IMODE(os.lstat(made).st_mode) == 0o700
    assert private.folder(folder) == folder  # found again, as it is


def test_links_of_this_user_and_dots_are_followed_and_checked(tmp_path, monkeypatch):
    (tmp_path / "real" / "cache").mkdir(parents=True, mode=0o700)
    (tmp_path / "relative").symlink_to("real")
    (tmp_path / "absolute").symlink_to(tmp_path / "real" / "cache")
    assert private.folder(tmp_path / "relative" / "cache")
    assert private.folder(tmp_path / "absolute")
    assert private.folder(tmp_path / "real" / "cache" / ".." / "cache" / ".")
    monkeypatch.chdir(tmp_path)
    assert private.folder(Path("relative/cache"))


def test_a_folder_others_may_write_is_refused_as_the_folder_but_not_on_the_way_if_sticky(
        tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    assert private.folder(shared / "mine")  # as /tmp holds a private folder
    with pytest.raises(private.NotPrivate, match="may be written by other users"):
        private.folder(shared)
    shared.chmod(0o777)  # no sticky bit: anyone may move `mine` away
    with pytest.raises(private.NotPrivate, match=r"mode 0777, no sticky bit"):
        private.folder(shared / "mine")
    (tmp_path / "group").mkdir(mode=0o770)
    (tmp_path / "group").chmod(0o775)
    with pytest.raises(private.NotPrivate, match="mode 0775"):
        private.folder(tmp_path / "group")


def test_a_folder_or_link_of_another_user_is_refused(tmp_path):
    (tmp_path / "theirs").mkdir()
    _chown_to_another(tmp_path / "theirs")
    with pytest.raises(private.NotPrivate, match="belongs to uid 65534, not to this user:"):
        private.folder(tmp_path / "theirs")
    with pytest.raises(private.NotPrivate, match="not to this user or root"):
        private.folder(tmp_path / "theirs" / "mine")
    (tmp_path / "mine").mkdir()
    (tmp_path / "their-link").symlink_to(tmp_path / "mine")
    _chown_to_another(tmp_path / "their-link")
    with pytest.raises(private.NotPrivate, match="is a symbolic link of uid 65534's"):
        private.folder(tmp_path / "their-link")


def test_check_parent_takes_a_folder_that_can_hold_private_ones_and_makes_nothing_in_it(
        tmp_path):
    """A sticky folder others may write (as /tmp) and a private one can hold private
    folders; one others may write without the sticky bit, another user's folder and a path
    through another user's link cannot, and nothing is made in them."""
    (tmp_path / "sticky").mkdir()
    (tmp_path / "sticky").chmod(0o1777)
    private.check_parent(tmp_path / "sticky")
    private.check_parent(tmp_path / "made" / "here")  # made, 0700, as `folder` makes it
    assert stat.S_IMODE(os.lstat(tmp_path / "made" / "here").st_mode) == 0o700
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    with pytest.raises(private.NotPrivate, match="mode 0777, no sticky bit"):
        private.check_parent(tmp_path / "open")
    (tmp_path / "theirs").mkdir()
    _chown_to_another(tmp_path / "theirs")
    with pytest.raises(private.NotPrivate, match="belongs to uid 65534, not to this user or"):
        private.check_parent(tmp_path / "theirs")
    (tmp_path / "their-link").symlink_to(tmp_path / "sticky")
    _chown_to_another(tmp_path / "their-link")
    with pytest.raises(private.NotPrivate, match="is a symbolic link of uid 65534's"):
        private.check_parent(tmp_path / "their-link")
    assert not any(any((tmp_path / n).iterdir()) for n in ("sticky", "open", "theirs"))


def test_a_link_loop_and_a_file_on_the_way_end_in_one_error(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(private.NotPrivate, match="too many symbolic links"):
        private.folder(tmp_path / "a")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        private.folder(tmp_path / "file" / "cache")


def test_read_takes_only_a_private_regular_file_of_this_user(tmp_path):
    path = tmp_path / "kept"
    path.write_bytes(b"x" * 10)
    path.chmod(0o600)
    assert private.read(path, 4) == b"xxxxx"  # limit + 1: the caller tells it is longer
    (tmp_path / "link").symlink_to(path)
    with pytest.raises(private.NotPrivate, match="is a symbolic link"):
        private.read(tmp_path / "link", 100)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(private.NotPrivate, match="not a regular file"):
        private.read(tmp_path / "fifo", 100)  # at once: nobody writes it
    path.chmod(0o622)
    with pytest.raises(private.NotPrivate, match="mode 0622"):
        private.read(path, 100)
    with pytest.raises(private.NotPrivate, match="mode 0622"):
        private.check_file(path)
    with pytest.raises(FileNotFoundError):
        private.read(tmp_path / "none", 100)


def test_read_refuses_a_file_of_another_user(tmp_path):
    path = tmp_path / "kept"
    path.write_bytes(b"{}")
    path.chmod(0o600)
    _chown_to_another(path)
    with pytest.raises(private.NotPrivate, match="belongs to uid 65534"):
        private.read(path, 100)


def test_write_makes_a_new_file_only_this_user_may_read(tmp_path):
    path = tmp_path / "new"
    private.write(path, b"data")
    assert path.read_bytes() == b"data" and stat.S_IMODE(os.lstat(path).st_mode) == 0o600
    with pytest.raises(FileExistsError):
        private.write(path, b"again")
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(FileExistsError):
        private.write(tmp_path / "link", b"through a link")
    assert not (tmp_path / "elsewhere").exists()
