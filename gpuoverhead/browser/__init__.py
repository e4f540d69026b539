"""WebGPU in a browser: headless Chromium driven over the DevTools protocol.

`launcher` finds and starts the browser (and makes sure it ends), `cdp` speaks the protocol,
`server` serves the page with cross-origin isolation, and `page/runner.js` issues and times
the cases in the page. The driver that uses them is drivers/chromium.py.
"""
