// The AgentNest web console: plain JavaScript, no build step. Everything it shows that a sandbox
// controls (output, paths, hosts, approval targets, audit fields) goes into the page as text
// (textContent), never as HTML, after terminal control sequences are taken out and invisible or
// reordering characters are escaped (text.js): nothing from a sandbox can take effect in the page. The Content-Security-Policy forbids any other script.
'use strict'

const state = { tenant: null, admin: false, approver: false, csrf: null, sandboxes: [], approvals: [], selected: null, seen: new Set(), events: null, runs: null }
const $ = (id) => document.getElementById(id)

// clean(), human() and humanText() come from text.js (loaded first): every character a sandbox
// could use to move, hide or reorder text is shown escaped, as the host's HumanText does.

function el(tag, attrs, ...children) {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (k === 'class') node.className = v
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v)
    else node.setAttribute(k, v)
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(clean(c)))
  return node
}

async function api(method, path, body) {
  const headers = {}
  if (method !== 'GET') headers['X-CSRF-Token'] = state.csrf ?? ''
  if (body !== undefined) headers['Content-Type'] = 'application/json'
  const res = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) })
  if (res.status === 401) {
    showSignIn()
    throw new Error('signed out')
  }
  const text = await res.text()
  const data = text ? JSON.parse(text) : null
  if (!res.ok) throw new Error(data?.error ? `${data.error.message} (${data.error.fix})` : `${res.status}`)
  return data
}

function showSignIn() {
  state.tenant = null
  state.events?.close()
  state.runs?.close()
  $('nav').hidden = true
  for (const id of ['sandboxes', 'approvals', 'audit']) $(id).hidden = true
  $('signin').hidden = false
}

function signedIn(session) {
  state.tenant = session.tenant
  state.admin = session.admin === true
  state.csrf = session.csrf
  // The admin sees every tenant's rows: each says whose it is.
  document.body.classList.toggle('admin', state.admin)
  // An approver key lists and answers questions and reads the audit; the server refuses the rest.
  state.approver = session.role === 'approver'
  document.body.classList.toggle('approver', state.approver)
  if (state.approver && !location.hash) location.hash = '#approvals'
  $('who').textContent = clean(session.tenant)
  $('signin').hidden = true
  $('nav').hidden = false
  listen()
  route()
}

function route() {
  if (!state.tenant) return
  const view = (location.hash || '#sandboxes').slice(1)
  for (const id of ['sandboxes', 'approvals', 'audit']) {
    $(id).hidden = id !== view
    $('nav-' + id).classList.toggle('active', id === view)
  }
  if (view === 'audit') fillAuditSandboxes()
}

function listen() {
  state.events?.close()
  const es = new EventSource('/console/events')
  es.addEventListener('sandboxes', (e) => renderSandboxes(JSON.parse(e.data)))
  es.addEventListener('approvals', (e) => renderApprovals(JSON.parse(e.data)))
  es.onerror = () => {
    // EventSource reconnects by itself; a session that ended shows the sign-in form.
    fetch('/console/session', { credentials: 'same-origin' }).then((r) => { if (r.status === 401) showSignIn() })
  }
  state.events = es
}

function ago(iso) {
  const s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000))
  return s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`
}

function left(iso) {
  const s = Math.round((Date.parse(iso) - Date.now()) / 1000)
  return s <= 0 ? 'expired' : s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${Math.round(s / 3600)} h`
}

const mib = (bytes) => `${Math.round(bytes / 1048576)} MiB`

// In use of the limit; '—' until the engine's first figure arrives (or where it gives none).
function memory(s) {
  return s.memoryInUseBytes == null ? `— of ${mib(s.memoryBytes)}` : `${mib(s.memoryInUseBytes)} of ${mib(s.memoryBytes)}`
}

function cpu(s) {
  return s.cpusInUse == null ? `— of ${s.cpus}` : `${s.cpusInUse.toFixed(2)} of ${s.cpus}`
}

// Listed sandboxes run; one whose TTL has run out is being removed by the server.
function status(s) {
  return Date.parse(s.expiresAt) <= Date.now() ? 'expiring' : 'running'
}

function renderSandboxes(list) {
  state.sandboxes = list
  $('no-sandboxes').hidden = list.length > 0
  const rows = list.map((s) =>
    el('tr', { 'data-id': s.id, class: s.id === state.selected ? 'selected' : '', onclick: () => select(s.id) },
      el('td', {}, el('code', {}, s.id.slice(0, 12))), el('td', { class: 'status' }, status(s)), el('td', { class: 'tenant' }, s.tenant),
      el('td', {}, s.image), el('td', { class: 'wide' }, s.runtime ?? 'default'), el('td', { class: 'wide' }, ago(s.createdAt)),
      el('td', {}, left(s.expiresAt)), el('td', { class: 'mem wide' }, memory(s)), el('td', { class: 'cpu wide' }, cpu(s))))
  $('sandbox-rows').replaceChildren(...rows)
  if (state.selected && !list.some((s) => s.id === state.selected)) {
    state.selected = null
    state.runs?.close()
    $('detail').hidden = true
  }
}

async function select(id) {
  state.selected = id
  renderSandboxes(state.sandboxes)
  $('detail').hidden = false
  $('detail-id').textContent = clean(id)
  $('detail-status').textContent = ''
  if (!state.approver) watchRuns(id)
  await refreshDetail()
}

// The sandbox's executions, their output streaming in as the server sees it.
function watchRuns(id) {
  state.runs?.close()
  $('runs').replaceChildren()
  $('no-runs').hidden = false
  const es = new EventSource(`/console/executions?sandbox=${encodeURIComponent(id)}`)
  es.addEventListener('run', (e) => renderRun(JSON.parse(e.data)))
  es.addEventListener('gone', () => { es.close(); $('detail-status').textContent = 'The sandbox is gone.' })
  state.runs = es
}

function renderRun(r) {
  $('no-runs').hidden = true
  const outcome = r.finishedAt ? r.outcome ?? 'finished' : 'running…'
  const output = el('pre', { class: 'output' }, r.output + (r.droppedChars ? `\n… ${r.droppedChars} more characters not kept` : ''))
  const item = el('li', { 'data-run': String(r.id), class: r.finishedAt ? 'done' : 'running' },
    el('details', r.finishedAt ? {} : { open: '' },
      el('summary', {}, `${r.kind} `, el('code', {}, r.text.slice(0, 120)), ` ${ago(r.startedAt)} ago, `, el('span', { class: 'outcome' }, outcome)),
      output))
  const had = $('runs').querySelector(`li[data-run="${r.id}"]`)
  if (had) {
    if (had.querySelector('details').open) item.querySelector('details').open = true
    had.replaceWith(item)
  } else {
    $('runs').prepend(item)
  }
}

async function refreshDetail() {
  const id = state.selected
  if (!id) return
  try {
    if (!state.approver) await refreshFiles(id)
    const audit = await api('GET', `/v1/sandboxes/${encodeURIComponent(id)}/audit?limit=20`)
    $('activity').replaceChildren(...audit.events.map((e) => el('li', {}, `${e.ts ?? e.time ?? ''} ${e.type} `, el('code', {}, summary(e)))))
  } catch (err) {
    $('detail-status').textContent = clean(err.message)
  }
}

async function refreshFiles(id) {
  const files = await api('GET', `/v1/sandboxes/${encodeURIComponent(id)}/files?recursive=true`)
  $('files').replaceChildren(...files.files.map((f) => {
    const name = f.path.split('/').pop()
    const item = el('li', {}, el('code', { class: 'path' }, f.path), ` ${f.type}, ${f.size} bytes `)
    if (f.type === 'file') {
      item.append(el('a', { href: `/v1/sandboxes/${encodeURIComponent(id)}/files/content?path=${encodeURIComponent(f.path)}`, download: clean(name) }, 'download'))
    }
    return item
  }))
}

function summary(e) {
  const d = e.data ?? e.details ?? {}
  return clean(d.command ?? d.code ?? d.target ?? d.host ?? d.path ?? JSON.stringify(d)).slice(0, 200)
}

async function act(what, fn) {
  if (!state.selected || !confirm(`${what} sandbox ${state.selected.slice(0, 12)}?`)) return
  try {
    const msg = await fn(state.selected)
    $('detail-status').textContent = clean(msg)
    await refreshDetail()
  } catch (err) {
    $('detail-status').textContent = clean(err.message)
  }
}

function renderApprovals(list) {
  state.approvals = list
  const fresh = list.filter((a) => !state.seen.has(a.id))
  fresh.forEach((a) => state.seen.add(a.id))
  if (fresh.length > 0) beep()
  $('badge').textContent = list.length ? String(list.length) : ''
  document.title = list.length ? `(${list.length}) AgentNest console` : 'AgentNest console'
  $('no-approvals').hidden = list.length > 0
  $('approval-list').replaceChildren(...list.map((a) => {
    const reason = el('input', { placeholder: 'reason (optional)', maxlength: '2000', class: 'reason' })
    const answer = (approve) => api('POST', `/v1/approvals/${encodeURIComponent(a.id)}`, { approve, reason: reason.value })
      .catch((err) => { item.append(el('p', { class: 'error' }, err.message)) })
    const item = el('li', { 'data-id': a.id },
      el('strong', {}, human(a.kind)), ' ', el('code', { class: 'target' }, human(a.target)),
      el('pre', { class: 'detail' }, humanText(a.detail)),
      el('p', {}, state.admin ? `tenant ${a.tenant}, ` : '', 'sandbox ', el('code', {}, a.sandboxId.slice(0, 12)), ', asked ', ago(a.requestedAt), ' ago, ',
        el('span', { class: 'timeout', 'data-expires': a.expiresAt }, `times out in ${left(a.expiresAt)}`)),
      reason, ' ',
      el('button', { type: 'button', class: 'approve', onclick: () => answer(true) }, 'Approve'), ' ',
      el('button', { type: 'button', class: 'danger deny', onclick: () => answer(false) }, 'Deny'))
    return item
  }))
}

function beep() {
  try {
    const ctx = new AudioContext()
    const osc = ctx.createOscillator()
    osc.frequency.value = 880
    osc.connect(ctx.destination)
    osc.start()
    osc.stop(ctx.currentTime + 0.15)
  } catch {
    // no audio (a page not yet touched by the user): the title badge still shows it
  }
}

function fillAuditSandboxes() {
  const select = $('audit-sandbox')
  const current = select.value
  select.replaceChildren(...state.sandboxes.map((s) => el('option', { value: s.id }, state.admin ? `${s.tenant} ${s.id.slice(0, 12)}` : s.id.slice(0, 12))))
  if (current && state.sandboxes.some((s) => s.id === current)) select.value = current
}

let auditRecords = []

async function loadAudit() {
  const id = $('audit-sandbox').value
  const v = $('verify')
  if (state.admin) {
    // The whole server chain: its cost grows with every tenant's history, so only the admin asks.
    const verify = await api('GET', '/v1/audit/verify')
    v.className = verify.ok ? 'ok' : 'error'
    v.textContent = verify.ok
      ? `Chain intact: ${verify.checked} records verified.`
      : clean(`Chain BROKEN at line ${verify.line} (seq ${verify.seq}): ${verify.problem}`)
  } else {
    v.className = ''
    v.textContent = 'The audit chain is verified by the operator (admin console, or agentnest audit verify on the host).'
  }
  if (!id) {
    $('audit-list').replaceChildren()
    return
  }
  const params = new URLSearchParams({ limit: '500' })
  if ($('audit-type').value) params.set('type', $('audit-type').value)
  if ($('audit-since').value) params.set('since', $('audit-since').value)
  const data = await api('GET', `/v1/sandboxes/${encodeURIComponent(id)}/audit?${params}`)
  const text = $('audit-text').value.toLowerCase()
  auditRecords = data.events.filter((e) => !text || JSON.stringify(e).toLowerCase().includes(text))
  $('audit-list').replaceChildren(...auditRecords.map((e) =>
    el('li', {}, el('details', {}, el('summary', {}, `${e.ts ?? e.time ?? ''} ${e.type} `, el('code', {}, summary(e))),
      el('pre', {}, JSON.stringify(e, null, 2))))))
}

function exportAudit() {
  const blob = new Blob(auditRecords.map((e) => JSON.stringify(e) + '\n'), { type: 'application/x-ndjson' })
  const a = el('a', { href: URL.createObjectURL(blob), download: 'audit.jsonl' })
  document.body.append(a)
  a.click()
  a.remove()
}

document.addEventListener('DOMContentLoaded', () => {
  $('signin-form').addEventListener('submit', async (e) => {
    e.preventDefault()
    $('signin-error').textContent = ''
    try {
      const res = await fetch('/console/session', { method: 'POST', credentials: 'same-origin', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ key: $('key').value }) })
      const data = await res.json()
      if (!res.ok) throw new Error(data?.error?.message ?? String(res.status))
      $('key').value = ''
      signedIn(data)
    } catch (err) {
      $('signin-error').textContent = clean(err.message)
    }
  })
  $('signout').addEventListener('click', async () => {
    await api('DELETE', '/console/session').catch(() => {})
    showSignIn()
  })
  $('extend').addEventListener('click', () => act('Extend', async (id) => {
    const s = await api('POST', `/v1/sandboxes/${encodeURIComponent(id)}/extend`, { seconds: 600 })
    return `Extended: now ends ${s.expiresAt}`
  }))
  $('snapshot').addEventListener('click', () => act('Snapshot', async (id) => {
    const name = prompt('Snapshot name (letters, digits, - and _)', 'console-' + Date.now())
    if (!name) return 'Cancelled.'
    const s = await api('POST', `/v1/sandboxes/${encodeURIComponent(id)}/snapshots`, { name })
    return `Saved snapshot ${s.name}`
  }))
  $('fork').addEventListener('click', () => act('Fork', async (id) => {
    const f = await api('POST', `/v1/sandboxes/${encodeURIComponent(id)}/fork`, {})
    return `Forked: ${f.sandbox?.id ?? ''}`
  }))
  $('destroy').addEventListener('click', () => act('Destroy', async (id) => {
    await api('DELETE', `/v1/sandboxes/${encodeURIComponent(id)}`)
    return 'Destroyed.'
  }))
  $('audit-form').addEventListener('submit', (e) => {
    e.preventDefault()
    loadAudit().catch((err) => { $('verify').textContent = clean(err.message) })
  })
  $('audit-export').addEventListener('click', exportAudit)
  window.addEventListener('hashchange', route)
  setInterval(() => {
    for (const span of document.querySelectorAll('.timeout')) span.textContent = `times out in ${left(span.dataset.expires)}`
  }, 1000)
  fetch('/console/session', { credentials: 'same-origin' })
    .then((r) => (r.ok ? r.json().then(signedIn) : showSignIn()))
    .catch(showSignIn)
})
