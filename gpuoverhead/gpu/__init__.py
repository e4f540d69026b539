"""WebGPU mechanics: adapters, bindings, a group's GPU objects, the wait, and the layers that
issue the calls (wrapper, raw FFI, the C loop)."""
