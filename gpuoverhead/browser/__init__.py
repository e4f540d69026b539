"""WebGPU in a browser as an implementation: headless Chromium driven over the DevTools protocol.

`chromium` finds and starts the browser (and makes sure it ends), `cdp` speaks the protocol,
`server` serves the page with cross-origin isolation, `page/runner.js` issues and times the
cases in the page, and `worker` is a worker process's body for a browser job.
"""
