"""WebGPU in a browser: headless Chromium driven over the DevTools protocol.

`launcher` finds and starts the browser (and makes sure it ends), `cdp` speaks the protocol
over the browser's DevTools pipe, `server` serves the page with cross-origin isolation,
`adapter` chooses the flags that give the page a GPU, `surface` builds and enables the Vulkan
layer that ANGLE on Vulkan needs on a display-less driver, and `page/runner.js` issues and
times the cases in the page. The driver that uses them is drivers/chromium.py.
"""
