#!/usr/bin/env node
// Golden fixtures for the tokenizers in data/text, from npm's `tiktoken` (the WASM build of OpenAI's
// tiktoken), installed by `scripts/setup.sh --reference` into tests/reference/node/.
//   node tests/reference/make_text_fixtures.js KJV_DIR
// KJV_DIR is scripts/prepare_kjv.sh's output. Writes into tests/reference/fixtures/text/:
//   <encoding>.tiktoken.gz   the full ranks of r50k_base and cl100k_base in tiktoken's file format
//                            ("<base64 token> <rank>" per line), gzip-compressed (o200k_base's go to
//                            tests/reference/node/, which is not committed)
//   r50k_base.tokenizer.json.gz  the same vocabulary as an HF tokenizer.json (BPE model, byte-level
//                            pre-tokenizer, merges derived from the ranks as transformers does), which
//                            must encode like the ranks (cl100k_base's goes to tests/reference/node/)
//   kjv_bpe1000.model        a SentencePiece BPE model trained by spm_train on the Pentateuch, and
//   spm_goldens.json.gz      {lines, ids}: spm_encode --output_format=id's ids for test lines
//   tiktoken_goldens.json.gz {encoding: [{name, mode, text_b64, ids}]}: tiktoken's ids for KJV text and
//                            adversarial text; mode "ordinary" = encode_ordinary, "all" =
//                            encode(text, allowed_special="all").
// Invalid UTF-8 (which tiktoken's string API cannot take) follows moh's documented rule: the text is cut
// at every byte that does not start a valid UTF-8 sequence, each valid run is encoded by tiktoken as its
// own text and each such byte becomes its single-byte token (encode_single_token).
"use strict";
const fs = require("fs");
const path = require("path");
const zlib = require("zlib");
const { Tiktoken } = require(require.resolve("tiktoken/lite", { paths: [path.join(__dirname, "node")] }));

const kjvDir = process.argv[2];
if (!kjvDir) {
  console.error("usage: node make_text_fixtures.js KJV_DIR (from scripts/prepare_kjv.sh)");
  process.exit(2);
}
const outDir = path.join(__dirname, "fixtures/text");
fs.mkdirSync(outDir, { recursive: true });
// o200k's compressed ranks (1.7 MB) are too big to commit: they go beside the npm package
// (tests/reference/node/, not committed) and its golden test runs where the reference is installed.
const ENCODINGS = ["r50k_base", "cl100k_base", "o200k_base"];
const UNCOMMITTED_RANKS = new Set(["o200k_base"]);

function loadEncoding(name) {
  return require(path.join(__dirname, "node/node_modules/tiktoken/encoders", name + ".json"));
}

// The package stores ranks as lines of "! <first rank> <base64 token> <base64 token> ...".
function ranksOf(spec) {
  const ranks = [];
  for (const line of spec.bpe_ranks.split("\n")) {
    if (!line) continue;
    const fields = line.split(" ");
    const first = Number(fields[1]);
    for (let k = 2; k < fields.length; ++k) ranks.push([fields[k], first + k - 2]);
  }
  return ranks;
}

// Deterministic PRNG (mulberry32) so the fixtures are reproducible.
function rng(seed) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Length of the valid UTF-8 sequence at bytes[i] (1..4), or 0 when that byte starts none (overlong,
// surrogate, above U+10FFFF, truncated, stray continuation): the same rule as data/text/utf8.cpp.
function utf8SequenceLength(b, i) {
  const c = b[i];
  if (c < 0x80) return 1;
  let n, lo = 0x80, hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) { n = 3; if (c === 0xe0) lo = 0xa0; if (c === 0xed) hi = 0x9f; }
  else if (c >= 0xf0 && c <= 0xf4) { n = 4; if (c === 0xf0) lo = 0x90; if (c === 0xf4) hi = 0x8f; }
  else return 0;
  if (i + n > b.length) return 0;
  if (b[i + 1] < lo || b[i + 1] > hi) return 0;
  for (let k = 2; k < n; ++k) if (b[i + k] < 0x80 || b[i + k] > 0xbf) return 0;
  return n;
}

function encodeBytes(enc, bytes, mode) {
  const ids = [];
  const decoder = new TextDecoder("utf-8", { fatal: true });
  let start = 0, i = 0;
  const flush = (end) => {
    if (end > start) {
      const text = decoder.decode(bytes.subarray(start, end));
      ids.push(...(mode === "all" ? enc.encode(text, "all") : enc.encode_ordinary(text)));
    }
  };
  while (i < bytes.length) {
    const n = utf8SequenceLength(bytes, i);
    if (n) { i += n; continue; }
    flush(i);
    ids.push(enc.encode_single_token(bytes.subarray(i, i + 1)));
    start = ++i;
  }
  flush(i);
  return ids;
}

function kjvCases() {
  const genesis = fs.readFileSync(path.join(kjvDir, "train/01_Ge.txt"), "utf8").split("\n").slice(0, 120).join("\n");
  const psalms = fs.readFileSync(path.join(kjvDir, "train/19_Psa.txt"), "utf8").split("\n").slice(0, 60).join("\n");
  const rev = fs.readFileSync(path.join(kjvDir, "val/66_Rev.txt"), "utf8").split("\n").slice(-40).join("\n");
  return [["kjv_genesis_1_5", genesis], ["kjv_psalms_1_4", psalms], ["kjv_revelation_end", rev]];
}

const ADVERSARIAL = [
  ["empty", ""],
  ["contractions", "I'm you're he'll they'd it's We'VE SHE'S 'S 'll don't O'Neil's rock'n'roll"],
  ["emoji", "hi 👋🏽 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 keycap 1️⃣ ❤️‍🔥 🫠🫠🫠"],
  ["cjk", "日本語のテキスト、中文文本。한국어 텍스트! 漢字かなカナ混じり文 東京2020"],
  ["combining", "e\u0301 a\u0300\u0316 Z\u0351\u0300\u0326\u0347a\u0364\u0304l\u0350g\u0313o\u0353 \u0915\u094d\u0937 \u0627\u064e\u0644\u0652"],
  ["unicode_space", "a\u00a0b\u2003c\u3000d\u0085e\u2028f\u2029g\u200bh\t\u000bi\u000cj\r\nk\n\n\nl  \u00a0 m"],
  ["next_line_is_space", "a \u0085b \u0085\u0085c !\u0085! \u0085 \u0085x\r\n\u0085\u0085y \u0085"],
  ["mongolian_vowel_separator_is_not_space", "x  \u180eb y   \u180e\u180e z \t\u180e a \u180eb \u180e\u180e c\u180e \u180e\n\u180e"],
  ["long_spaces", "x" + " ".repeat(3000) + "y" + "\t".repeat(700) + "\n".repeat(500) + " ".repeat(999)],
  ["long_digits", "0".repeat(1500) + " " + "1234567890".repeat(120) + " 3.14159265358979 1,000,000 ٣٤٥ ⅷ ²³"],
  ["code", "def f(x):\n\tif x<=0:\n\t\treturn {'a': [1, 2]}  # comment\n    return x**2 // 3 /* c */ && y || !z;\r\n"],
  ["punctuation", "!!!???...---___***&&&%%%$$$###@@@~~~```^^^|||\\\\\\///<<<>>>===+++"],
  ["special_as_text", "before <|endoftext|> middle <|fim_prefix|><|fim_middle|><|endofprompt|> <|endoftext after"],
  ["mixed_scripts", "Ελληνικά Русский текст עברית العربية हिन्दी ไทย ქართული Ἀρχῇ ẞtraße İstanbul ǅ ﬁ"],
];

const SPECIAL_CASES = [
  ["special_all", "doc one<|endoftext|>doc two<|endoftext|><|endoftext|> end <|endoftext"],
  ["special_fim", "<|fim_prefix|>def f(<|fim_suffix|>)<|fim_middle|>x<|endofprompt|>"],
];

// Random strings drawn from blocks that stress the split patterns: letters of several cases and
// scripts, marks, digits, punctuation, whitespace of every kind, emoji, CJK.
const POOLS = [
  "abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", "'’ ,.;:!?-_()[]{}<>|\"/\\",
  " \t\n\r\u00a0\u0085\u2009\u3000\u000b\u000c", "\u0300\u0301\u0308\u0327\u0483\u093c\u0e31\u20dd",
  "éÀçÑøßÆœǅǈǋᾈ", "дЖяЁщ", "日本語中文한국", "ａｂｃ０１２", "٠١٢३४५", "😀🎉🇺🇸👍🏿\u200d\ufe0f",
];
function randomText(rand, length) {
  let s = "";
  for (let k = 0; k < length; ++k) {
    const pool = [...POOLS[Math.floor(rand() * POOLS.length)]];
    s += pool[Math.floor(rand() * pool.length)];
  }
  return s;
}

// Valid text with random bytes spliced in: stray continuations, truncated sequences, overlongs,
// surrogates, 0xF5..0xFF.
function invalidUtf8(rand, length) {
  const pieces = [];
  const bad = [[0x80], [0xbf], [0xc0, 0xaf], [0xc1, 0x81], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xf0, 0x8f, 0xbf, 0xbf],
               [0xf4, 0x90, 0x80, 0x80], [0xf5], [0xff], [0xfe, 0xff], [0xe0, 0x80, 0x80], [0xf0, 0x9f, 0x98]];
  for (let k = 0; k < length; ++k) {
    if (rand() < 0.3) pieces.push(Buffer.from(bad[Math.floor(rand() * bad.length)]));
    else if (rand() < 0.2) pieces.push(Buffer.from([Math.floor(rand() * 256)]));
    else pieces.push(Buffer.from(randomText(rand, 1 + Math.floor(rand() * 6)), "utf8"));
  }
  return Buffer.concat(pieces);
}

// GPT-2's byte -> printable character map (the "byte-level" alphabet of HF tokenizers).
function bytesToUnicode() {
  const bs = [];
  for (let b = 33; b <= 126; ++b) bs.push(b);
  for (let b = 161; b <= 172; ++b) bs.push(b);
  for (let b = 174; b <= 255; ++b) bs.push(b);
  const cs = bs.slice();
  let n = 0;
  for (let b = 0; b < 256; ++b)
    if (!bs.includes(b)) { bs.push(b); cs.push(256 + n); ++n; }
  const map = new Array(256);
  bs.forEach((b, k) => { map[b] = String.fromCodePoint(cs[k]); });
  return map;
}

// An HF tokenizer.json equivalent to tiktoken ranks, the way transformers converts tiktoken models:
// vocab = every token (byte-level spelled) with its rank; merges = for each token, every split into two
// tokens, ordered by the token's rank (ties by the ranks of the halves).
function hfTokenizerJson(spec, ranks) {
  const map = bytesToUnicode();
  const spell = (buf) => Array.from(buf, (b) => map[b]).join("");
  const rankOf = new Map(ranks.map(([token, rank]) => [Buffer.from(token, "base64").toString("latin1"), rank]));
  const vocab = {};
  const merges = [];
  for (const [token, rank] of ranks) {
    const bytes = Buffer.from(token, "base64");
    vocab[spell(bytes)] = rank;
    const local = [];
    for (let k = 1; k < bytes.length; ++k) {
      const left = bytes.subarray(0, k), right = bytes.subarray(k);
      const l = rankOf.get(left.toString("latin1")), r = rankOf.get(right.toString("latin1"));
      if (l !== undefined && r !== undefined) local.push([l, r, spell(left), spell(right)]);
    }
    local.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [, , l, r] of local) merges.push([l, r]);
  }
  const gpt2Pattern = spec.pat_str === loadEncoding("r50k_base").pat_str;
  const preTokenizer = gpt2Pattern
    ? { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }
    : { type: "Sequence", pretokenizers: [
        { type: "Split", pattern: { Regex: spec.pat_str }, behavior: "Isolated", invert: false },
        { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: false }] };
  return {
    version: "1.0", truncation: null, padding: null,
    added_tokens: Object.entries(spec.special_tokens).map(([content, id]) => ({
      id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null, pre_tokenizer: preTokenizer, post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: null, end_of_word_suffix: null,
             fuse_unk: false, byte_fallback: false, ignore_merges: !gpt2Pattern, vocab, merges },
  };
}

// A SentencePiece model trained by Debian's spm_train with the options of moh's train_sentencepiece
// (data/text/sentencepiece_tokenizer.cpp) on the Pentateuch, and spm_encode's ids for test lines.
function sentencePieceFixtures() {
  const { execFileSync } = require("child_process");
  const os = require("os");
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "moh_spm_"));
  const books = ["01_Ge", "02_Exo", "03_Lev", "04_Num", "05_Deu"].map((b) => path.join(kjvDir, "train", b + ".txt"));
  execFileSync("spm_train", [`--input=${books.join(",")}`, `--model_prefix=${tmp}/kjv_bpe1000`, "--vocab_size=1000",
    "--model_type=bpe", "--byte_fallback=true", "--character_coverage=0.99995", "--normalization_rule_name=identity",
    "--remove_extra_whitespaces=false", "--split_digits=true", "--allow_whitespace_only_pieces=true",
    "--max_sentence_length=1000000", "--num_threads=1", "--minloglevel=2"], { stdio: ["ignore", "ignore", "inherit"] });
  fs.copyFileSync(`${tmp}/kjv_bpe1000.model`, path.join(outDir, "kjv_bpe1000.model"));
  const kjv = fs.readFileSync(path.join(kjvDir, "val/66_Rev.txt"), "utf8").split("\n").slice(0, 40);
  const rand = rng(7);
  const lines = [...kjv, ...ADVERSARIAL.map(([, text]) => text.replace(/[\r\n]/g, " ")),
                 ...Array.from({ length: 30 }, () => randomText(rand, 80).replace(/[\r\n]/g, " "))];
  const out = execFileSync("spm_encode", [`--model=${tmp}/kjv_bpe1000.model`, "--output_format=id"],
                           { input: lines.join("\n") + "\n" }).toString();
  const ids = out.split("\n").slice(0, lines.length).map((l) => (l ? l.split(" ").map(Number) : []));
  fs.writeFileSync(path.join(outDir, "spm_goldens.json.gz"), zlib.gzipSync(JSON.stringify({ lines, ids }) + "\n", { level: 9 }));
  fs.rmSync(tmp, { recursive: true });
  console.log(`sentencepiece: kjv_bpe1000.model, ${lines.length} lines`);
}

function main() {
  const goldens = {};
  for (const name of ENCODINGS) {
    const spec = loadEncoding(name);
    const ranks = ranksOf(spec);
    const file = ranks.map(([token, rank]) => `${token} ${rank}\n`).join("");
    const ranksDir = UNCOMMITTED_RANKS.has(name) ? path.join(__dirname, "node") : outDir;
    fs.writeFileSync(path.join(ranksDir, name + ".tiktoken.gz"), zlib.gzipSync(file, { level: 9 }));
    const enc = new Tiktoken(spec.bpe_ranks, spec.special_tokens, spec.pat_str);
    for (const [token, rank] of ranks.filter((_, k) => k % 997 === 0))  // the ranks we wrote are the encoder's
      if (enc.encode_single_token(Buffer.from(token, "base64")) !== rank) throw new Error(`${name}: rank mismatch at ${rank}`);
    const cases = [];
    const add = (caseName, bytes, mode) =>
      cases.push({ name: caseName, mode, text_b64: Buffer.from(bytes).toString("base64"), ids: encodeBytes(enc, bytes, mode) });
    for (const [caseName, text] of [...kjvCases(), ...ADVERSARIAL]) add(caseName, Buffer.from(text, "utf8"), "ordinary");
    for (const [caseName, text] of SPECIAL_CASES) add(caseName, Buffer.from(text, "utf8"), "all");
    const rand = rng(15);
    for (let k = 0; k < 60; ++k) add(`random_text_${k}`, Buffer.from(randomText(rand, 20 + Math.floor(rand() * 300)), "utf8"), "ordinary");
    for (let k = 0; k < 30; ++k) add(`invalid_utf8_${k}`, invalidUtf8(rand, 5 + Math.floor(rand() * 60)), "ordinary");
    goldens[name] = { n_vocab: enc.n_vocab ?? null, cases };
    // The HF form of r50k is committed; cl100k's is written beside the reference install.
    if (name !== "o200k_base") {
      const hfDir = name === "r50k_base" ? outDir : path.join(__dirname, "node");
      fs.writeFileSync(path.join(hfDir, name + ".tokenizer.json.gz"),
                       zlib.gzipSync(JSON.stringify(hfTokenizerJson(spec, ranks)), { level: 9 }));
    }
    enc.free();
    console.log(`${name}: ${ranks.length} ranks, ${cases.length} cases`);
  }
  sentencePieceFixtures();
  fs.writeFileSync(path.join(outDir, "tiktoken_goldens.json.gz"), zlib.gzipSync(JSON.stringify(goldens) + "\n", { level: 9 }));
}

main();
