// Runs a WASI (preview 1) command module under Node: cargo's runner for the mapper SDK's unit
// tests built for wasm32-wasip1 (scripts/test), so its byte scans are also tested as the guests
// run them, as 32-bit WebAssembly. Usage: wasi-run.mjs FILE ARGS...
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';

const [file, ...args] = process.argv.slice(2);
const wasi = new WASI({ version: 'preview1', args: [file, ...args], env: {}, returnOnExit: true });
const module = await WebAssembly.compile(await readFile(file));
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
process.exitCode = wasi.start(instance);
