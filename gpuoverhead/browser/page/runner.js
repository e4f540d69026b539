// gpuoverhead's runner in the browser: the same cases as the native implementations, issued
// through the JS WebGPU API and timed in the page with performance.now() (5 µs steps when the
// page is cross-origin isolated), so that the DevTools round trip that starts each sample is
// outside the timed region. Python (gpuoverhead/drivers/chromium.py) calls these functions.
"use strict";

const gpuo = {
  device: null, pipeline: null, cases: [], grid: [1, 1], timer: null,

  // What the browser offers, without keeping a device: adapter, features, timer, isolation.
  // A GPU process that fails to start can leave requestAdapter() unanswered: bounded.
  async info(waitMs = 15000) {
    const out = {crossOriginIsolated: self.crossOriginIsolated, userAgent: navigator.userAgent,
                 timerResolutionUs: timerResolution() * 1000};
    if (!navigator.gpu) return {...out, error: "navigator.gpu is missing: WebGPU is off"};
    const late = new Promise((r) => setTimeout(() => r("late"), waitMs));
    const adapter = await Promise.race(
      [navigator.gpu.requestAdapter({powerPreference: "high-performance"}), late]);
    if (adapter === "late") {
      return {...out, error: `requestAdapter() did not answer in ${waitMs / 1000} s ` +
              "(the browser's GPU process may have failed to start)"};
    }
    if (!adapter) return {...out, error: "requestAdapter() returned null: no WebGPU adapter"};
    const i = adapter.info || {};
    return {...out, vendor: i.vendor || "", architecture: i.architecture || "",
            device: i.device || "", description: i.description || "",
            driver: i.driver || "", backend: i.backend || "", type: i.type || "",
            isFallbackAdapter: Boolean(i.isFallbackAdapter ?? adapter.isFallbackAdapter),
            features: [...adapter.features].sort()};
  },

  // A device (with timestamp queries where asked and offered), its error log, the kernel
  // module and, with timestamps, the query set and buffers of one stamped pass.
  async open(shader, wantTimestamps) {
    const adapter = await navigator.gpu.requestAdapter({powerPreference: "high-performance"});
    const timestamps = wantTimestamps && adapter.features.has("timestamp-query");
    const device = await adapter.requestDevice(
      {requiredFeatures: timestamps ? ["timestamp-query"] : []});
    const errors = [];
    device.onuncapturederror = (e) => errors.push(e.error.message);
    const module = device.createShaderModule({code: await (await fetch(shader)).text()});
    if (timestamps) {
      const querySet = device.createQuerySet({type: "timestamp", count: 2});
      const resolved = device.createBuffer({size: 16, usage: GPUBufferUsage.QUERY_RESOLVE |
        GPUBufferUsage.COPY_SRC});
      const read = device.createBuffer({size: 16, usage: GPUBufferUsage.MAP_READ |
        GPUBufferUsage.COPY_DST});
      this.timer = {querySet, resolved, read, writes: {querySet,
        beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1}};
    }
    Object.assign(this, {device, errors});
    return {device, module, timestamps};
  },

  // The module's pipeline at `entry` with override `constants`; an Error where it does not
  // compile here.
  async pipelineOf(module, entry, constants) {
    this.device.pushErrorScope("validation");
    const pipeline = this.device.createComputePipeline({layout: "auto",
      compute: {module, entryPoint: entry, constants}});
    const error = await this.device.popErrorScope();
    if (error) throw new Error(`the kernel does not compile here: ${error.message}`);
    return pipeline;
  },

  // A device, the kernel's pipeline and one buffer per case (its dispatches add to it).
  async setup(spec) {
    const {device, module, timestamps} = await this.open(spec.shader, spec.timestamps);
    const pipeline = await this.pipelineOf(module, "main", {WG: spec.workgroupSize});
    const bytes = Math.max(spec.elements, 1) * 4;
    this.cases = spec.cases.map(() => {
      const data = device.createBuffer({size: bytes, usage: GPUBufferUsage.STORAGE |
        GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST});
      const staging = device.createBuffer({size: 4, usage: GPUBufferUsage.MAP_READ |
        GPUBufferUsage.COPY_DST});
      const bind = {layout: pipeline.getBindGroupLayout(0),
        entries: [{binding: 0, resource: {buffer: data}}]};
      return {data, staging, bind, bindGroup: device.createBindGroup(bind), bytes};
    });
    Object.assign(this, {pipeline, specs: spec.cases, grid: spec.grid});
    // One dispatch on a scratch buffer: the first one pays for compiling the pipeline in
    // the driver, which no sample should (the cases' buffers stay untouched).
    const scratch = device.createBuffer({size: bytes, usage: GPUBufferUsage.STORAGE});
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, device.createBindGroup({layout: pipeline.getBindGroupLayout(0),
      entries: [{binding: 0, resource: {buffer: scratch}}]}));
    pass.dispatchWorkgroups(...spec.grid, 1);
    pass.end();
    device.queue.submit([encoder.finish()]);
    await device.queue.onSubmittedWorkDone();
    return {timestamps};
  },

  // One sample of case i at N = n: [wall ns, issue ns (clock read before the wait), GPU ns
  // or -1]. The clock reads bracket the WebGPU calls and the wait, nothing else. A case
  // with `freshBindGroup` creates its bind group before each dispatch (the test of a
  // constant is what the reused loops pay for sharing the code: well under a ns, JIT'd).
  async run(i, n) {
    const c = this.cases[i], spec = this.specs[i], fresh = spec.freshBindGroup;
    const {device, pipeline} = this, queue = device.queue, [x, y] = this.grid;
    if (spec.methodology === "naive" && spec.sync === "readback") {
      const t0 = performance.now();
      const encoder = device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      pass.setPipeline(pipeline); pass.setBindGroup(0, c.bindGroup);
      pass.dispatchWorkgroups(x, y, 1); pass.end();
      encoder.copyBufferToBuffer(c.data, 0, c.staging, 0, 4);
      queue.submit([encoder.finish()]);
      const issued = performance.now();
      await c.staging.mapAsync(GPUMapMode.READ);
      c.staging.getMappedRange(0, 4).slice(0);
      c.staging.unmap();
      return [ns(performance.now() - t0), ns(issued - t0), -1];
    }
    if (spec.sync === "timestamps") return this.timed(c, n);
    const encoding = spec.methodology === "naive" ? "submit" : spec.encoding;
    const t0 = performance.now();
    if (encoding === "submit") {
      for (let k = 0; k < n; k++) {
        const encoder = device.createCommandEncoder();
        const pass = encoder.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, fresh ? device.createBindGroup(c.bind) : c.bindGroup);
        pass.dispatchWorkgroups(x, y, 1); pass.end();
        queue.submit([encoder.finish()]);
      }
    } else if (encoding === "pass") {
      const encoder = device.createCommandEncoder();
      for (let k = 0; k < n; k++) {
        const pass = encoder.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, fresh ? device.createBindGroup(c.bind) : c.bindGroup);
        pass.dispatchWorkgroups(x, y, 1); pass.end();
      }
      queue.submit([encoder.finish()]);
    } else {
      const encoder = device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      for (let k = 0; k < n; k++) {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, fresh ? device.createBindGroup(c.bind) : c.bindGroup);
        pass.dispatchWorkgroups(x, y, 1);
      }
      pass.end();
      queue.submit([encoder.finish()]);
    }
    const issued = performance.now();
    await queue.onSubmittedWorkDone();
    return [ns(performance.now() - t0), ns(issued - t0), -1];
  },

  // N dispatches in one pass between two timestamp writes; GPU ns from the resolved pair.
  async timed(c, n) {
    const {device, pipeline, timer} = this, [x, y] = this.grid;
    const t0 = performance.now();
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass({timestampWrites: timer.writes});
    for (let k = 0; k < n; k++) {
      pass.setPipeline(pipeline); pass.setBindGroup(0, c.bindGroup);
      pass.dispatchWorkgroups(x, y, 1);
    }
    pass.end();
    return this.stamped(encoder, t0);
  },

  // Submits a stamped pass's encoder and reads its two stamps back: [wall ns since t0, issue
  // ns, GPU ns between the stamps].
  async stamped(encoder, t0) {
    const timer = this.timer;
    encoder.resolveQuerySet(timer.querySet, 0, 2, timer.resolved, 0);
    encoder.copyBufferToBuffer(timer.resolved, 0, timer.read, 0, 16);
    this.device.queue.submit([encoder.finish()]);
    const issued = performance.now();
    await timer.read.mapAsync(GPUMapMode.READ);
    const [begin, end] = new BigInt64Array(timer.read.getMappedRange().slice(0));
    timer.read.unmap();
    return [ns(performance.now() - t0), ns(issued - t0), Number(end - begin)];
  },

  // A workload's Work as data (drivers/chromium.py, PageContext): buffers with their first
  // bytes, pipelines by entry point and constants, bind groups of [binding, buffer] pairs,
  // and per case its unit sequences of [pipeline, bind group, x, y] dispatches. The
  // workload's numpy checks run in Python on what `read` returns.
  async load(plan) {
    const {device, module, timestamps} = await this.open(plan.shader, plan.timestamps);
    this.buffers = plan.buffers.map(({data, uniform}) => {
      const bytes = fromBase64(data);
      const buffer = device.createBuffer({size: bytes.length, usage: GPUBufferUsage.COPY_SRC |
        GPUBufferUsage.COPY_DST | (uniform ? GPUBufferUsage.UNIFORM : GPUBufferUsage.STORAGE)});
      device.queue.writeBuffer(buffer, 0, bytes);
      return buffer;
    });
    const modules = [module, ...plan.modules.map((code) => device.createShaderModule({code}))];
    const pipelines = [];
    for (const [entry, constants, m] of plan.pipelines) {
      pipelines.push(await this.pipelineOf(modules[m], entry, constants));
    }
    const groups = plan.bindGroups.map(([p, entries]) => device.createBindGroup({
      layout: pipelines[p].getBindGroupLayout(0),
      entries: entries.map(([binding, b]) => ({binding, resource: {buffer: this.buffers[b]}}))}));
    this.steps = (s) => s.map(([p, g, x, y]) => [pipelines[p], groups[g], x, y]);
    this.works = plan.cases.map(({sequences, timestamps: stamped}) => ({stamped,
      sequences: sequences.map(this.steps)}));
    this.hosts = plan.hosts.map(({src, size, steps, argmax}) => ({src: this.buffers[src], size,
      argmax, steps: this.steps(steps), last: null, staging: device.createBuffer({size,
        usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST})}));
    await device.queue.onSubmittedWorkDone();
    return {timestamps};
  },

  // Dispatches [pipeline, bind group, x, y] in one pass and submit, outside any timed region.
  async submit(steps) {
    const encoder = this.device.createCommandEncoder();
    encode(encoder, this.steps(steps));
    this.device.queue.submit([encoder.finish()]);
    await this.device.queue.onSubmittedWorkDone();
  },

  // N units of staged read h (work.Staged): its dispatches and the copy into its MAP_READ
  // buffer in one submit, the map, the bytes copied out, the unmap, and with `argmax` the
  // index of the largest f32. [wall ns, the same as issue ns, -1]: each unit waits itself.
  async reads(h, n) {
    const r = this.hosts[h], device = this.device;
    const t0 = performance.now();
    for (let k = 0; k < n; k++) {
      const encoder = device.createCommandEncoder();
      encode(encoder, r.steps);
      encoder.copyBufferToBuffer(r.src, 0, r.staging, 0, r.size);
      device.queue.submit([encoder.finish()]);
      await r.staging.mapAsync(GPUMapMode.READ);
      const bytes = r.staging.getMappedRange().slice(0);
      r.staging.unmap();
      r.last = r.argmax ? argmax(new Float32Array(bytes)) : bytes;
    }
    const wall = ns(performance.now() - t0);
    return [wall, wall, -1];
  },

  // What staged read h's last unit got, as base64 u32 values (NO_TOKEN in each before one).
  last(h) {
    const r = this.hosts[h];
    const values = r.last === null ? new Uint32Array(r.argmax ? 1 : r.size / 4).fill(0xFFFFFFFF)
      : r.argmax ? Uint32Array.of(r.last) : new Uint32Array(r.last);
    return toBase64(new Uint8Array(values.buffer));
  },

  forget(h) { this.hosts[h].last = null; },

  // Units u .. u + n of work i (unit k runs its sequence k % period) in one compute pass and
  // one submit, as the native fusion issuer's `dispatch` encoding does; waited for, or read
  // back from its timestamps.
  async replay(i, n, u) {
    const {sequences, stamped} = this.works[i], period = sequences.length;
    const device = this.device;
    const t0 = performance.now();
    const encoder = device.createCommandEncoder();
    const pass = encoder.beginComputePass(stamped ? {timestampWrites: this.timer.writes} : {});
    for (let k = u; k < u + n; k++) {
      for (const [pipeline, group, x, y] of sequences[k % period]) {
        pass.setPipeline(pipeline); pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(x, y, 1);
      }
    }
    pass.end();
    if (stamped) return this.stamped(encoder, t0);
    device.queue.submit([encoder.finish()]);
    const issued = performance.now();
    await device.queue.onSubmittedWorkDone();
    return [ns(performance.now() - t0), ns(issued - t0), -1];
  },

  // Buffer b's bytes (base64), after the work submitted before.
  async read(b) {
    const buffer = this.buffers[b];
    const read = this.device.createBuffer({size: buffer.size, usage: GPUBufferUsage.MAP_READ |
      GPUBufferUsage.COPY_DST});
    const encoder = this.device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffer, 0, read, 0, buffer.size);
    this.device.queue.submit([encoder.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const out = toBase64(new Uint8Array(read.getMappedRange()));
    read.destroy();
    return out;
  },

  // Buffer b from offset 0 set to `data` (base64): a workload's reset.
  async write(b, data) {
    this.device.queue.writeBuffer(this.buffers[b], 0, fromBase64(data));
    await this.device.queue.onSubmittedWorkDone();
  },

  // Each case's buffer read back as [first value, least and largest of the others] (all
  // start at 0), with the validation errors the device reported.
  async outputs() {
    const out = [];
    for (const c of this.cases) {
      const read = this.device.createBuffer({size: c.bytes, usage: GPUBufferUsage.MAP_READ |
        GPUBufferUsage.COPY_DST});
      const encoder = this.device.createCommandEncoder();
      encoder.copyBufferToBuffer(c.data, 0, read, 0, c.bytes);
      this.device.queue.submit([encoder.finish()]);
      await read.mapAsync(GPUMapMode.READ);
      const v = new Uint32Array(read.getMappedRange());
      let low = Infinity, high = -Infinity;
      for (let k = 1; k < v.length; k++) { low = Math.min(low, v[k]); high = Math.max(high, v[k]); }
      out.push(v.length > 1 ? [v[0], low, high] : [v[0], v[0], v[0]]);
      read.unmap();
    }
    return {values: out, errors: this.errors};
  },
};

function ns(ms) { return Math.round(ms * 1e6); }

// `steps` ([pipeline, bind group, x, y]) in one compute pass of `encoder` (none: no pass).
function encode(encoder, steps) {
  if (!steps.length) return;
  const pass = encoder.beginComputePass();
  for (const [pipeline, group, x, y] of steps) {
    pass.setPipeline(pipeline); pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(x, y, 1);
  }
  pass.end();
}

// The index of the largest value (the first of equals, as numpy's argmax).
function argmax(values) {
  let best = 0;
  for (let k = 1; k < values.length; k++) if (values[k] > values[best]) best = k;
  return best;
}

function fromBase64(text) { return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0)); }

function toBase64(bytes) {
  let text = "";
  for (let k = 0; k < bytes.length; k += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(k, k + 0x8000));
  }
  return btoa(text);
}

// The smallest step of performance.now() seen in a short busy loop (ms).
function timerResolution() {
  let best = Infinity, last = performance.now();
  const end = last + 20;
  while (last < end) {
    const now = performance.now();
    if (now > last) { best = Math.min(best, now - last); last = now; }
  }
  return best;
}

self.gpuo = gpuo;
