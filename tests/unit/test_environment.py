"""What run.json records of the machine: clocks and how finely they tick."""

from __future__ import annotations

from gpuoverhead.run import environment


def test_the_clocks_are_recorded_and_a_coarse_one_is_warned_about():
    clocks = environment.host()["clocks"]
    assert clocks["perf_counter"]["resolution_ns"] > 0 and clocks["perf_counter"]["monotonic"]
    assert "time" in clocks
    windows = {"perf_counter": {"resolution_ns": 100.0}}
    apple = {"perf_counter": {"resolution_ns": 41.667}}
    linux = {"perf_counter": {"resolution_ns": 1.0}}
    assert "100 ns" in environment.clock_warnings(windows)[0]
    assert environment.clock_warnings(apple) and not environment.clock_warnings(linux)


def test_a_package_s_version_is_importlib_metadata_s():
    """run.json's package versions, read from the metadata's headers alone, are what
    importlib.metadata reads from the whole file, for every distribution installed here
    (wheels' METADATA, eggs' PKG-INFO) and for one whose description follows its headers."""
    import email
    from importlib import metadata

    found = list(metadata.distributions())
    assert len(found) > 10
    assert [environment.version(d) for d in found] == [d.version for d in found]

    class Written(metadata.Distribution):
        def read_text(self, filename):
            return ("Metadata-Version: 2.1\nName: x\nVersion: 1.2\n\nVersion: 9\n"
                    if filename == "METADATA" else None)

        def locate_file(self, path):
            return path

    assert environment.version(Written()) == Written().version == "1.2"
    assert email.message_from_string(Written().read_text("METADATA")).get_payload() \
        == "Version: 9\n"
