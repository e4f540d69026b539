"""browser/surface.py: the Vulkan layer the tool builds for headless Chromium's ANGLE on
Vulkan, checked through the system's real Vulkan loader (lavapipe here lacks
VK_EXT_headless_surface, as NVIDIA's server driver does): with the layer the loader lists the
extension and an instance that asks for it is made; a layer kept where another user could
have written it is not used."""

from __future__ import annotations

import ctypes.util
import json
import os
import subprocess
import sys

import pytest

from gpuoverhead.browser import surface

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux Vulkan loader"),
    pytest.mark.skipif(ctypes.util.find_library("vulkan") is None, reason="no libvulkan.so.1"),
    pytest.mark.skipif(surface.compiler() is None, reason="no C compiler")]

#: In a child: the loader's instance extensions, and vkCreateInstance with the extension.
PROBE = """
import ctypes, json
vk = ctypes.CDLL("libvulkan.so.1")
class Ext(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 256), ("spec", ctypes.c_uint32)]
count = ctypes.c_uint32()
vk.vkEnumerateInstanceExtensionProperties(None, ctypes.byref(count), None)
props = (Ext * count.value)()
vk.vkEnumerateInstanceExtensionProperties(None, ctypes.byref(count), props)
class Info(ctypes.Structure):
    _fields_ = [("sType", ctypes.c_int32), ("pNext", ctypes.c_void_p),
                ("flags", ctypes.c_uint32), ("app", ctypes.c_void_p),
                ("layers_n", ctypes.c_uint32), ("layers", ctypes.c_void_p),
                ("exts_n", ctypes.c_uint32), ("exts", ctypes.POINTER(ctypes.c_char_p))]
names = (ctypes.c_char_p * 1)(b"VK_EXT_headless_surface")
instance = ctypes.c_void_p()
made = vk.vkCreateInstance(ctypes.byref(Info(1, None, 0, None, 0, None, 1, names)), None,
                           ctypes.byref(instance))
if made == 0:
    vk.vkDestroyInstance(instance, None)
print(json.dumps({"listed": any(p.name == b"VK_EXT_headless_surface" for p in props),
                  "made": made}))
"""
GPU_SET = ("--enable-features=Vulkan", "--use-angle=vulkan", "--disable-vulkan-surface")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of this test's own, and the layer found again in it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(surface.SWITCH, raising=False)
    surface.layer.cache_clear()
    yield tmp_path / "cache" / "gpuoverhead"
    surface.layer.cache_clear()


def _loader(extra: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **extra})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_built_layer_lists_the_headless_surface_to_the_real_loader(cache):
    without = _loader({})
    if without["listed"]:
        pytest.skip("this Vulkan driver offers VK_EXT_headless_surface itself")
    assert without["made"] == -7  # VK_ERROR_EXTENSION_NOT_PRESENT, as on NVIDIA's driver
    env = surface.environment(GPU_SET)
    assert env[surface.ENABLE] == "1" and env["XDG_DATA_DIRS"].startswith(str(cache))
    assert _loader(env) == {"listed": True, "made": 0}
    said = surface.state(GPU_SET)
    assert said.startswith("surface layer on") and str(cache) in said
    # the browser started with the tool's default flags, or with the layer off, gets none
    assert surface.environment(()) == {} and surface.state(()) is None


def test_the_layer_is_off_where_asked(cache, monkeypatch):
    monkeypatch.setenv(surface.SWITCH, "0")
    assert surface.environment(GPU_SET) == {}
    assert surface.state(GPU_SET) == f"surface layer off ({surface.SWITCH}=0)"
    assert not surface.wanted((*GPU_SET, "--use-angle=swiftshader"))  # the last one counts


@pytest.mark.parametrize("how", ["writable", "theirs", "link"])
def test_hostile_a_kept_layer_another_user_could_have_written_is_not_used(cache, how):
    """A layer runs inside the root-run browser: a library or manifest kept writable by
    others or given to another user is not loaded but built again in its place (its folder
    being this user's alone); a kept folder reached through a link to a folder others may
    write is passed over, said, and the layer built in a fresh folder (gpu/private.py's
    rule: a link of this user's to a private folder would be followed)."""
    first = surface.layer()
    assert isinstance(first, surface.Layer) and first.data.parent == cache
    kept = first.data
    if how == "writable":
        (kept / surface.LIBRARY).chmod(0o777)
    elif how == "theirs":
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        os.chown(kept / surface.MANIFEST, 65534, 65534)
    else:
        moved = kept.with_name("elsewhere")
        kept.rename(moved)
        moved.chmod(0o777)
        kept.symlink_to(moved, target_is_directory=True)
    assert not surface._whole(kept)
    surface.layer.cache_clear()
    again = surface.layer()
    assert isinstance(again, surface.Layer) and surface._whole(again.data)
    if how == "link":
        assert again.data != kept and not again.data.is_symlink()
        assert "not this user's own and private" in again.passed_over
        assert "not this user's own" in surface.state(GPU_SET)
    else:
        assert again.data == kept and not again.passed_over
        info = (kept / surface.MANIFEST).stat()
        assert info.st_uid == os.geteuid() and not info.st_mode & 0o022
