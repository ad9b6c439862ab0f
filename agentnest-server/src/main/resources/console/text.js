// How the console shows text a sandbox controls: the same escaping as the host's one function for
// people (io.agentnest.text.HumanText), mirrored here because the console renders in the browser.
// Terminal escapes (CSI, OSC) are taken out; every other character that could move, hide, recolour
// or reorder what follows (C0/C1 controls, DEL, format characters such as the bidi overrides and
// isolates U+202A-202E and U+2066-2069, U+200E/F, U+061C, zero-width characters and the BOM, line
// and paragraph separators, lone surrogates) is shown as an escape: \xHH, \uHHHH or \UHHHHHHHH.
// Issue 42 (14): a target written as U+202E + "/etats-lla/" was displayed as "/all-state/".
'use strict'

const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/gu

function escapeCodePoint(ch) {
  switch (ch) {
    case '\\': return '\\\\'
    case '\n': return '\\n'
    case '\r': return '\\r'
    case '\t': return '\\t'
  }
  const cp = ch.codePointAt(0)
  if (cp < 0x100) return '\\x' + cp.toString(16).padStart(2, '0')
  if (cp < 0x10000) return '\\u' + cp.toString(16).padStart(4, '0')
  return '\\U' + cp.toString(16).padStart(8, '0')
}

function withoutTerminalEscapes(value) {
  return String(value ?? '')
    .replace(/\u001b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)?/g, '')
}

// Text on the page (output, labels, messages): lines and tabs stay, the rest is escaped.
function clean(value) {
  return withoutTerminalEscapes(value).replace(UNSAFE, (ch) => (ch === '\n' || ch === '\t' ? ch : escapeCodePoint(ch)))
}

// One line a person decides on (an approval's kind and target): HumanText.line, backslash doubled
// so that an escape the sandbox typed cannot pass for one the console made.
function human(value) {
  return String(value ?? '').replace(/\\|[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/gu, escapeCodePoint)
}

// Several lines a person decides on (an approval's detail): HumanText.text.
function humanText(value) {
  return String(value ?? '').replace(/\\|[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/gu, (ch) => (ch === '\n' || ch === '\t' ? ch : escapeCodePoint(ch)))
}

if (typeof module !== 'undefined') module.exports = { clean, human, humanText }
