"""One revision's decode_floor.py on Qwen2.5-0.5B at a cache of 128 only: python3
.revs/diag.py REV_DIR IMPLEMENTATIONS (a fresh process a revision)."""
import importlib.util
import sys

rev, impls = sys.argv[1], sys.argv[2]
sys.path.insert(0, rev)
sys.argv = ["decode_floor.py", "--steps", "64", "--implementations", impls]
spec = importlib.util.spec_from_file_location("df", f"{rev}/benchmarks/decode_floor.py")
df = importlib.util.module_from_spec(spec)
sys.modules["df"] = df
spec.loader.exec_module(df)
original = df.arguments


def arguments():
    a = original()
    a.shapes, a.caches = [896], (128,)
    return a


df.arguments = arguments
df.main()
