#!/usr/bin/env node
// Single-thread encode throughput of npm tiktoken (WASM) on a text file, the reference column of
// scripts/bench_text.sh. Usage: node bench/text/tiktoken_speed.js ENCODING TEXT_FILE [REPEATS]
// Prints one JSON line like moh_bench_text's (with the same ids digest) (MB = 10^6 bytes of UTF-8 input, best of the repeats).
"use strict";
const fs = require("fs");
const path = require("path");
const tiktokenDir = path.join(__dirname, "../../tests/reference/node");
const { get_encoding } = require(require.resolve("tiktoken", { paths: [tiktokenDir] }));

const [encoding, file, repeatsArg] = process.argv.slice(2);
if (!encoding || !file) {
  console.error("usage: node bench/text/tiktoken_speed.js ENCODING TEXT_FILE [REPEATS]");
  process.exit(2);
}
const repeats = Number(repeatsArg || 5);
const bytes = fs.readFileSync(file);
const text = bytes.toString("utf8");
const enc = get_encoding(encoding);
let best = Infinity, ids = [];
for (let r = 0; r < repeats; ++r) {
  const start = process.hrtime.bigint();
  ids = enc.encode_ordinary(text);
  best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
}
enc.free();
let digest = 2166136261;  // FNV-1a over the ids, as moh_bench_text prints
for (const id of ids) digest = Math.imul((digest ^ id) >>> 0, 16777619) >>> 0;
console.log(JSON.stringify({ tokenizer: `tiktoken ${encoding}`, bytes: bytes.length, tokens: ids.length, ids_fnv1a: digest,
                             best_seconds: +best.toFixed(4),
                             mb_per_s: +(bytes.length / best / 1e6).toFixed(2) }));
