// The page of `peermesh web` (docs/web-room.md): one ES module, no framework, no build step.
// It shows the room's events (the objects `--json` prints) and asks the room for things over one WebSocket.
// Everything a peer wrote (names, chat, file names, messages) is data: it reaches the page through
// textContent and text nodes only, never parsed as markup.
//
// Hooks for tests (stable ids, classes and attributes):
//   body[data-ready]               set when the room's state after a connect is shown (`ready`)
//   body[data-view]                "no-token", "lobby", "room" or "ended"
//   #connection, #reconnect        the connection's state; "Try again" once the server is gone
//   #status                        errors (`failed` answers, `error` events) and notices, aria-live assertive
//   #announce                      polite announcements: offers, new messages, transfer milestones
//   #no-token                      shown when the page has no token
//   #lobby                         not in a room yet:
//     #nearby                      li[data-room] per room found, each with a button.join
//     #nearby-state, #nearby-empty looking / nothing found (with why)
//     #discovery-note              a `discovery-off` message
//     #browse-button               looks again
//     #host-name, #host-button     hosts a room
//     #join-name, #join-button     joins by name, NAME@HOST or code
//   #room                          in a room:
//     #room-name, #me-name         (in the header) the room's name and yours
//     #members                     li[data-peer-id] per member: input[type=radio] picks it; .name .code .route .encryption
//     #recipient-everyone          the radio for "Everyone in the room"; #recipient-name says who is picked
//     #nobody                      why nobody else is visible
//     #chat-log, #chat-input, #chat-send
//     #file-input, #folder-input, #drop-zone (role=button; members' rows take drops too)
//     #transfers                   li[data-number] per transfer: progress, .status, button.cancel;
//                                  li[data-upload] while the page hands an upload's files over
//     #received                    li per received file with an a[download]
//   #offer                         the waiting question: #offer-accept, #offer-decline, #offer-always, #offer-countdown
//   #activity                      the room's other events, as its terminal words them
//   #leave                         leaves the room (and ends `peermesh web`)

const TOKEN_KEY = "peermesh-token";
const OFFER_SECONDS = 60;          // the room declines an unanswered offer after this (docs/web-room.md)
const NOBODY_AFTER_MS = 4000;      // an empty room for this long gets the "why nobody is visible" note
const BROWSE_EVERY_MS = 10000;     // the lobby looks for rooms again this often
const LOG_LIMIT = 200;             // lines kept in the chat and activity logs (the room replays 200 chat lines)
const FRAME_LIMIT = 60000;         // the server takes frames of at most 64 KiB

const $ = (id) => document.getElementById(id);

// ==== Text

// Characters that hide or reorder text (controls, bidirectional overrides, line separators): shown as escapes, as
// the terminal shows them (TerminalText), so "gnp.exe" with U+202E cannot pass for "exe.png".
// Zero-width and invisible formatting characters too (U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E, tags).
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u061c\u180e\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]|\udb40[\udc00-\udc7f]/g;

/** `value` as visible text; with `lines`, newlines stay (chat). */
function visible(value, lines = false) {
  return String(value ?? "").replace(HIDDEN, (c) => {
    if (lines && c === "\n") return c;
    const code = c.codePointAt(0);
    return code <= 0x9f ? "\\x" + code.toString(16).padStart(2, "0") : `\\u{${code.toString(16)}}`;
  });
}

/** An element; `text` sets its text, `children` are nodes or strings (strings become text nodes). */
function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value == null) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key === "data") Object.assign(node.dataset, value);
    else node.setAttribute(key, value);
  }
  node.append(...children.filter((c) => c != null));
  return node;
}

/** Peer-supplied text, isolated from its surroundings (bidi) and wrapped anywhere. */
const peerText = (value, cls = "") => el("bdi", { class: `peer-text ${cls}`.trim(), text: visible(value) });

/** 1536 → "1.5 KiB", as the terminal says sizes. */
function bytes(count) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = Number(count) || 0;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
  return unit === 0 ? `${Math.round(value)} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** 125 → "2 min 5 s". */
function duration(seconds) {
  const s = Math.max(0, Math.round(Number(seconds) || 0));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** "14:05" from an event's ISO time, or "" when it has none. */
function clock(time) {
  const date = new Date(time);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** A room name as a shell word, for the `peermesh join ROOM` the note shows. */
const shellWord = (word) => (/^[\w.@:+-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`);

const clip = (text, max = 160) => (text.length > max ? text.slice(0, max) + "…" : text);

// ==== Token (R3): it comes in the fragment, which browsers never send; it moves to this tab's sessionStorage (so a
// reload keeps it) and leaves the address bar at once.

function takeToken() {
  const match = /^#t=(.*)$/.exec(location.hash);
  if (match) {
    try { sessionStorage.setItem(TOKEN_KEY, match[1]); } catch { /* storage off: this load still works */ }
    try { history.replaceState(null, "", "/"); } catch { /* not on http: nothing to strip from */ }
    return match[1];
  }
  try { return sessionStorage.getItem(TOKEN_KEY) ?? ""; } catch { return ""; }
}

// ==== State: what the room told since the last `hello` (it replays everything on each connect).

const state = {
  me: null,              // hello: { peer, peer_id }
  inRoom: false,
  room: null,            // { name, host }
  replaying: false,      // between hello and ready: no announcements
  ready: false,
  members: new Map(),    // peer_id → { row, info }
  recipient: "",         // a member's peer_id; "" is everyone
  offers: new Map(),     // question number → { ev, deadline, answering }
  shownOffer: null,      // the number in #offer
  transfers: new Map(),  // number → row state
  uploads: new Map(),    // request id → upload
  requests: new Map(),   // request id → { kind, … } until done/failed
  chatRows: new Map(),   // say request id → its chat line, for `delivered`
  nearby: new Map(),     // room key → room (shown)
  found: null,           // room key → room (the look under way)
  browseId: null,
  joining: false,        // a join or host is under way
  joinCode: "",
  discoveryOff: "",
};

let nextId = 0;
let memberSeq = 0;
let nearbySeq = 0;
let browseTimer = 0;
let nobodyTimer = 0;
let offerTimer = 0;
let focusBeforeOffer = null;

// ==== Views and regions

function setView(view) {
  document.body.dataset.view = view;
  $("no-token").hidden = view !== "no-token";
  $("lobby").hidden = view !== "lobby";
  $("room").hidden = view !== "room";
  $("room-title").hidden = view !== "room";
  $("activity-section").hidden = view === "no-token";
  $("leave").hidden = view !== "room" && view !== "lobby";
  $("leave").textContent = view === "room" ? "Leave the room" : "Quit";
}

function setConnection(text, gone = false) {
  $("connection").textContent = text;
  $("connection").classList.toggle("gone", gone);
  $("reconnect").hidden = !gone;
}

/** A visible message in #status (errors are announced at once: the region is assertive). */
function notify(text, kind = "notice") {
  const dismiss = el("button", { type: "button", class: "dismiss", text: "Dismiss" });
  const item = el("p", { class: kind }, el("span", { class: "status-text", text }), " ", dismiss);
  dismiss.addEventListener("click", () => { item.remove(); });
  const status = $("status");
  status.append(item);
  while (status.children.length > 4) status.firstElementChild.remove();
}

/** Says `text` politely to screen readers (offers, messages, milestones); never during a replay. */
function announce(text) {
  if (state.replaying) return;
  const item = el("p", { text: clip(text, 300) });
  const region = $("announce");
  region.append(item);
  while (region.children.length > 3) region.firstElementChild.remove();
}

/** Keeps a log at most LOG_LIMIT lines, following its end when the reader was at the end. */
function appendLine(list, item) {
  const atEnd = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.append(item);
  while (list.children.length > LOG_LIMIT) list.firstElementChild.remove();
  if (atEnd) list.scrollTop = list.scrollHeight;
}

/** An event as its terminal line, in #activity. */
function logEvent(ev) {
  const line = ev.text || ev.event;
  appendLine($("activity"), el("li", {}, el("time", { text: clock(ev.time) }), " ", el("span", { class: "line", text: visible(line, true) })));
}

// ==== The WebSocket

// The steps of a page load, first time each, on the page's performance timeline (DevTools shows them; the page test
// says which step was slow when a load is).
function markOnce(name) {
  if (performance.getEntriesByName(name).length === 0) performance.mark(name);
}

let socket = null;
let failures = 0;        // connects in a row that never opened
let leaving = false;
let retryTimer = 0;

function connect() {
  clearTimeout(retryTimer);
  setConnection(failures ? "Reconnecting…" : "Connecting…");
  let ws;
  try {
    ws = new WebSocket(`ws://${location.host}/ws`, ["peermesh.v1", "peermesh.t." + token]);
  } catch {
    return connectionLost(false);
  }
  let opened = false;
  socket = ws;
  ws.addEventListener("open", () => { opened = true; failures = 0; setConnection("Connected"); markOnce("peermesh-socket-open"); });
  ws.addEventListener("message", (message) => receive(message.data));
  ws.addEventListener("close", () => { if (socket === ws) connectionLost(opened); });
}

// A socket that was open and closed is retried at once (the server may have cut a slow reader off); connects that
// never open mean the server is gone: its token died with it, so after a few tries the page says so and stops.
function connectionLost(wasOpen) {
  socket = null;
  state.ready = false;
  document.body.removeAttribute("data-ready");
  clearTimeout(browseTimer);
  if (leaving) return ended("You left. peermesh web has ended; you can close this tab.", false);
  if (!wasOpen) failures += 1;
  if (failures >= 4) {
    return ended("Cannot reach peermesh web: it has quit, this link is from an earlier run, or too many of its pages "
      + "are open. Start it with `peermesh web` and open the link it prints.");
  }
  setConnection("Connection lost — reconnecting…");
  retryTimer = setTimeout(connect, Math.min(8000, 500 * 2 ** failures));
}

function ended(text, retry = true) {
  setConnection(text, true);
  $("reconnect").hidden = !retry;
  document.body.dataset.view = "ended";
  $("main").inert = true;
  $("leave").hidden = true;
  clearInterval(offerTimer);
}

/** Sends request `kind` with `fields`; its id, or null when not connected. `context` is kept for its answer. */
function ask(kind, fields = {}, context = {}) {
  if (!socket || socket.readyState !== WebSocket.OPEN) {
    notify("Not connected to peermesh web right now; try again in a moment.", "error");
    return null;
  }
  nextId += 1;
  const id = `page-${Date.now().toString(36)}-${nextId}`;
  const frame = JSON.stringify({ request: kind, id, ...fields });
  if (new TextEncoder().encode(frame).length > FRAME_LIMIT) {
    notify(kind === "upload" ? "Too many files in one go for the page: send them in parts (or a folder with `peermesh send`)."
      : "That is too long to send in one go.", "error");
    return null;
  }
  state.requests.set(id, { kind, ...context });
  socket.send(frame);
  return id;
}

function receive(data) {
  let ev;
  try { ev = JSON.parse(data); } catch { return; }
  if (!ev || typeof ev.event !== "string") return;
  const handler = handlers.get(ev.event);
  try {
    if (handler) handler(ev); else logEvent(ev);
  } catch (error) {
    console.error("peermesh: could not show", ev.event, error);
  }
}

// ==== Entering, leaving, the lobby

function resetRoomState() {
  state.members.clear();
  state.offers.clear();
  state.transfers.clear();
  state.chatRows.clear();
  state.nearby.clear();
  state.found = null;
  state.browseId = null;
  state.shownOffer = null;
  state.inRoom = false;
  state.room = null;
  state.joinCode = "";
  state.discoveryOff = "";
  // Answers to requests of the last connection never come: uploads not yet handed over are dropped; one whose
  // files are going up finishes, and its transfers show as the room's.
  for (const [id, upload] of state.uploads) {
    if (!upload.uploadId) { upload.row.remove(); state.uploads.delete(id); } else upload.orphaned = true;
  }
  state.requests.clear();
  for (const id of ["members", "chat-log", "received", "nearby"]) $(id).replaceChildren();
  for (const row of [...$("transfers").children]) if (!row.dataset.upload) row.remove();
  $("join-code-line").hidden = true;
  $("discovery-note").hidden = true;
  $("room-discovery-note").hidden = true;
  $("nearby-empty").hidden = true;
  pick("");
  hideOffer();
  setJoining(false);
  updateTransfersEmpty();
}

function enterRoom(name, host) {
  state.inRoom = true;
  state.room = { name: name || "", host: host || "" };
  clearTimeout(browseTimer);
  $("room-name").textContent = visible(name || (host ? `${host}'s room` : "the room"));
  $("join-command").textContent = `peermesh join ${shellWord(name || "ROOM")}`;
  setView("room");
  setJoining(false);
  updateNobody();
}

function showLobby() {
  state.inRoom = false;
  setView("lobby");
}

function browse() {
  clearTimeout(browseTimer);
  if (state.inRoom || state.browseId || !state.ready) return;
  state.browseId = ask("browse", { timeout: 3 });
  if (!state.browseId) { $("browse-button").disabled = false; return; }
  state.found = new Map();
  $("nearby-state").textContent = state.nearby.size ? "Looking again…" : "Looking for rooms nearby…";
}

const roomKey = (ev) => `${ev.host_id ?? ev.host ?? ""}\n${ev.room ?? ""}`;

/** A room seen by the look under way (from a `room` or a `member` event). */
function foundRoom(ev) {
  const key = roomKey(ev);
  let room = state.found?.get(key);
  if (!room) {
    // Seen before: the same row (a focused Join button stays put), its members counted afresh.
    room = state.nearby.get(key) ?? { room: ev.room ?? "", host: ev.host ?? "", fingerprint: ev.host_fingerprint ?? "", join: "" };
    room.members = new Set();
    state.found?.set(key, room);
    if (!state.nearby.has(key)) state.nearby.set(key, room);
  }
  if (ev.event === "room" && ev.join) room.join = ev.join;
  if (ev.event === "member" && ev.peer_id) room.members.add(ev.peer_id);
  renderNearby();
}

/** #nearby as state.nearby says: rows of rooms gone go, new ones come at the end, the others are updated in place. */
function renderNearby() {
  const list = $("nearby");
  const rooms = [...state.nearby.values()];
  for (const row of [...list.children]) if (!rooms.some((room) => room.row === row)) row.remove();
  for (const room of rooms) {
    if (!room.row) {
      nearbySeq += 1;
      room.what = el("p", { id: `nearby-${nearbySeq}`, class: "what" });
      const join = el("button", { type: "button", class: "join", "aria-describedby": room.what.id, text: "Join" });
      join.disabled = state.joining;
      join.addEventListener("click", () => joinRoom(room.join || room.room));
      room.row = el("li", { data: { room: room.room } }, room.what, join);
      list.append(room.row);
    }
    const count = room.members.size;
    room.what.replaceChildren(el("strong", {}, peerText(room.room || "(no name)", "room")), " hosted by ",
      peerText(room.host, "host"), room.fingerprint ? ` (key ${visible(room.fingerprint)})` : "",
      count ? ` · ${count} member${count === 1 ? "" : "s"}` : "");
  }
}

function joinRoom(selector) {
  if (!selector) return;
  if (ask("join", { room: selector }, { selector })) {
    setJoining(true);
    notify(`Joining ${visible(selector)}…`);
  }
}

/** While a join is under way, the other ways in wait. */
function setJoining(busy) {
  state.joining = busy;
  for (const button of document.querySelectorAll("#nearby .join, #host-button, #join-button")) button.disabled = busy;
}

// ==== Members

function upsertMember(ev, changes) {
  if (!ev.peer_id || ev.peer_id === state.me?.peer_id) return;
  let member = state.members.get(ev.peer_id);
  if (!member) {
    member = makeMemberRow(ev.peer_id);
    state.members.set(ev.peer_id, member);
    $("members").append(member.row);
  }
  Object.assign(member.info, { peer: ev.peer ?? member.info.peer }, changes);
  const { info, parts } = member;
  parts.name.textContent = visible(info.peer);
  parts.code.textContent = `code ${info.code || "pending"}`;
  parts.route.textContent = info.route || "route unknown";
  parts.encryption.textContent = info.encryption || "encryption unknown";
  updateNobody();
}

function makeMemberRow(peerId) {
  memberSeq += 1;
  const id = `pick-${memberSeq}`;
  const radio = el("input", { type: "radio", name: "recipient", id });
  radio.value = peerId;
  radio.addEventListener("change", () => pick(peerId));
  const parts = {
    name: el("bdi", { class: "peer-text name" }),
    code: el("span", { class: "code" }),
    route: el("span", { class: "route" }),
    encryption: el("span", { class: "encryption" }),
  };
  const row = el("li", { class: "member", data: { peerId } },
    radio, el("label", { for: id }, parts.name),
    el("p", { class: "facts" }, parts.code, " · ", parts.route, " · ", parts.encryption));
  acceptDrops(row, () => peerId);
  return { row, info: {}, parts };
}

function removeMember(peerId) {
  const member = state.members.get(peerId);
  if (!member) return;
  member.row.remove();
  state.members.delete(peerId);
  if (state.recipient === peerId) {
    pick("");
    notify(`${visible(member.info.peer)} left: files now go to everyone in the room.`);
  }
  updateNobody();
}

/** Picks who files go to: a member's peer_id, or "" for everyone. */
function pick(peerId) {
  state.recipient = peerId;
  const member = state.members.get(peerId);
  $("recipient-name").textContent = member ? visible(member.info.peer) : "everyone in the room";
  if (member) member.row.querySelector("input").checked = true; else $("recipient-everyone").checked = true;
}

// Why nobody is visible: said after a moment, not at once (members arrive right after a join).
function updateNobody() {
  clearTimeout(nobodyTimer);
  const empty = state.inRoom && state.members.size === 0;
  if (!empty) { $("nobody").hidden = true; return; }
  if (!state.replaying) nobodyTimer = setTimeout(() => { $("nobody").hidden = !(state.inRoom && state.members.size === 0); }, NOBODY_AFTER_MS);
}

// ==== Chat

/** The chat text of a `message` or `said` event: its `text` is the line as typed (the terminal's line is `line`). */
function chatText(ev) {
  return String(ev.text ?? "");
}

function addChat(ev, own) {
  const who = own ? el("span", { class: "who", text: "You" }) : peerText(ev.peer, "who");
  const text = visible(chatText(ev), true);
  const item = el("li", { class: own ? "own" : "" },
    el("time", { text: clock(ev.time) }), " ", who, el("span", { class: "sep", text: ": " }),
    el("bdi", { class: "peer-text said", text }));
  appendLine($("chat-log"), item);
  if (own && ev.request) state.chatRows.set(ev.request, item);
  if (!own) announce(`${visible(ev.peer)} says: ${text}`);
}

function sendChat(event) {
  event.preventDefault();
  const input = $("chat-input");
  const text = input.value;
  if (!text.trim()) return;
  const id = ask("say", { text });
  if (!id) return;
  input.value = "";
}

// ==== Offers and other questions (one shown at a time, the room's order)

function addQuestion(ev) {
  const number = Number(ev.number);
  if (!Number.isFinite(number)) return;
  const known = state.offers.get(number);
  if (known) { known.ev = ev; known.answering = false; } else {
    // The countdown runs from when the room asked (the event's time), so a reload shows the time really left.
    const asked = Date.parse(ev.time);
    const start = Number.isFinite(asked) && asked <= Date.now() + 5000 && Date.now() - asked < OFFER_SECONDS * 1000 ? asked : Date.now();
    state.offers.set(number, { ev, deadline: start + OFFER_SECONDS * 1000, answering: false });
    announce(describeQuestion(ev).title);
  }
  if (!state.replaying) showNextOffer();
}

function endQuestion(ev) {
  state.offers.delete(Number(ev.number));
  logEvent(ev);
  showNextOffer();
}

function describeQuestion(ev) {
  const who = visible(ev.peer);
  switch (ev.kind) {
    case "file": return { title: `${who} offers a file`, always: true };
    case "files": return { title: `${who} offers ${ev.files ?? "several"} files`, always: true };
    case "member": return { title: `${who} wants to join the room, introduced by ${visible(ev.via)}`, always: false };
    default: return { title: `${who} wants to join the room`, always: false };
  }
}

function showNextOffer() {
  const next = [...state.offers.entries()].find(([, offer]) => !offer.answering);
  if (!next) return hideOffer();
  const [number, offer] = next;
  const panel = $("offer");
  const changed = state.shownOffer !== number || panel.hidden;
  state.shownOffer = number;
  renderOffer(offer);
  if (panel.hidden) focusBeforeOffer = document.activeElement;
  panel.hidden = false;
  clearInterval(offerTimer);
  offerTimer = setInterval(() => renderCountdown(offer), 1000);
  if (changed) $("offer-accept").focus();
}

function renderOffer(offer) {
  const { ev } = offer;
  const about = describeQuestion(ev);
  $("offer-title").textContent = about.title;
  const names = $("offer-names");
  names.replaceChildren();
  const isFile = ev.kind === "file" || ev.kind === "files";
  if (isFile) {
    const list = ev.kind === "files" ? String(ev.names ?? "").split("\n").filter(Boolean) : [ev.file];
    for (const name of list) names.append(el("li", {}, peerText(name, "file")));
    const more = Number(ev.files ?? list.length) - list.length;
    if (more > 0) names.append(el("li", { text: `and ${more} more` }));
  }
  names.hidden = !isFile;
  $("offer-size").textContent = isFile ? `Total size: ${bytes(ev.bytes)}`
    + (ev.kind === "files" && ev.file ? ` — in “${visible(ev.file)}”` : "") : "";
  $("offer-size").hidden = !isFile;
  $("offer-code").textContent = isFile ? "" : `Verification code ${visible(ev.code)}: compare it with ${visible(ev.peer)} before you accept.`
    + (ev.fingerprint ? ` Key ${visible(ev.fingerprint)}.` : "");
  $("offer-code").hidden = isFile;
  $("offer-always").hidden = !about.always;
  $("offer-always").textContent = `Always accept from ${visible(ev.peer)}`;
  const waiting = state.offers.size - 1;
  $("offer-more").textContent = waiting > 0 ? `${waiting} more question${waiting === 1 ? "" : "s"} waiting after this one.` : "";
  for (const id of ["offer-accept", "offer-decline", "offer-always"]) $(id).disabled = false;
  renderCountdown(offer);
}

function renderCountdown(offer) {
  const left = Math.ceil((offer.deadline - Date.now()) / 1000);
  $("offer-countdown").textContent = left > 0 ? `Declined automatically in ${left} s if you do not answer.`
    : "No answer in time: it is being declined.";
}

function hideOffer() {
  clearInterval(offerTimer);
  const panel = $("offer");
  if (panel.hidden) return;
  const hadFocus = panel.contains(document.activeElement);
  panel.hidden = true;
  state.shownOffer = null;
  if (hadFocus) {
    // Back where the person was, else to the chat (not to a hidden or vanished element).
    const usable = (node) => node && node !== document.body && node.isConnected && !node.closest("[hidden]");
    const back = [focusBeforeOffer, $("chat-input"), $("host-name")].find(usable);
    if (back) back.focus();
  }
  focusBeforeOffer = null;
}

function answerOffer(accept, always) {
  const number = state.shownOffer;
  const offer = state.offers.get(number);
  if (number == null || !offer) return;
  if (!ask("answer", { number, accept, always }, { number })) return;
  // Shown as answered at once; the room's `answered` removes it, a `failed` brings it back.
  offer.answering = true;
  showNextOffer();
}

// ==== Transfers (rows keyed by the room's numbers) and uploads (before the room numbers them)

/** The row of transfer `number` (made on first sight), updated with what `ev` says; null for no number. */
function transferRow(number, ev = {}) {
  if (!Number.isFinite(number)) return null;
  let row = state.transfers.get(number);
  if (!row) {
    const what = el("p", { class: "what", id: `transfer-${number}` });
    const progress = el("progress", { "aria-labelledby": `transfer-${number}` });
    const status = el("p", { class: "status", text: "starting…" });
    const cancel = el("button", { type: "button", class: "cancel", "aria-describedby": `transfer-${number}`, text: "Cancel" });
    cancel.addEventListener("click", () => cancelTransfer(number));
    const item = el("li", { class: "transfer", data: { number: String(number) } }, what, progress, status, cancel);
    row = { number, item, what, progress, status, cancel, file: "", peer: "", direction: "", bytes: 0, done: 0, said: new Set(), ended: false };
    state.transfers.set(number, row);
    $("transfers").append(item);
    updateTransfersEmpty();
  }
  for (const key of ["file", "peer", "direction"]) if (ev[key] != null) row[key] = String(ev[key]);
  if (ev.bytes != null) row.bytes = Number(ev.bytes) || 0;
  if (ev.done != null) row.done = Number(ev.done) || 0;
  if (ev.event === "file-started" && !row.direction) row.direction = "receiving";
  // The words change rarely; progress comes four times a second.
  const sending = row.direction === "sending";
  const words = [row.direction, row.file, row.peer].join("\n");
  if (row.words !== words) {
    row.words = words;
    row.what.replaceChildren(sending ? "Sending " : "Receiving ", peerText(row.file, "file"),
      sending ? " to " : " from ", peerText(row.peer, "peer"));
  }
  row.progress.max = Math.max(1, row.bytes);
  row.progress.value = Math.min(row.done, row.bytes);
  return row;
}

function updateTransfersEmpty() {
  $("transfers-empty").hidden = $("transfers").children.length > 0;
}

function onProgress(ev) {
  const row = transferRow(Number(ev.number), ev);
  if (!row || row.ended) return;
  const parts = [`${bytes(row.done)} of ${bytes(row.bytes)}`];
  if (ev.waiting) parts.push(`waiting: ${visible(ev.waiting)}`);
  else {
    if (ev.bytes_per_second != null) parts.push(`${bytes(ev.bytes_per_second)}/s`);
    parts.push(ev.seconds_left != null ? `${duration(ev.seconds_left)} left` : "time left unknown");
  }
  row.status.textContent = parts.join(" · ");
  milestone(row);
}

/** Announces a transfer's start and half-way point once each (not every tick). */
function milestone(row) {
  const name = `${row.direction === "sending" ? "Sending" : "Receiving"} “${clip(visible(row.file), 80)}”`;
  if (!row.said.has("start")) { row.said.add("start"); announce(`${name} ${row.direction === "sending" ? "to" : "from"} ${clip(visible(row.peer), 80)}`); }
  if (row.bytes > 0 && row.done * 2 >= row.bytes && !row.said.has("half")) { row.said.add("half"); announce(`${name}: half done`); }
}

/** The outcome of a numbered transfer (`file-received`, `file-cancelled`, …); the row stays, without Cancel. */
function finishRow(number, text, kind) {
  const row = state.transfers.get(number);
  if (!row) return;
  row.status.textContent = text;
  row.item.dataset.outcome = kind;
  if (kind !== "interrupted") endRow(row);
}

function endRow(row) {
  if (row.ended) return;
  row.ended = true;
  row.item.classList.add("ended");
  // Focus on the vanishing Cancel button goes to the list's heading, not to the top of the page.
  if (document.activeElement === row.cancel) $("transfers-h").focus();
  row.cancel.remove();
  if (!row.item.dataset.outcome) {
    const complete = row.bytes > 0 && row.done >= row.bytes;
    row.item.dataset.outcome = complete ? "done" : "stopped";
    row.status.textContent = complete ? (row.direction === "sending" ? "Sent" : "Done") : "Stopped";
    if (complete) row.progress.value = row.progress.max;
  }
  // Ended rows are kept for a look back, but not forever.
  const ended = [...$("transfers").querySelectorAll("li.ended")];
  for (const old of ended.slice(0, Math.max(0, ended.length - 20))) {
    state.transfers.delete(Number(old.dataset.number));
    old.remove();
  }
}

function cancelTransfer(number) {
  const row = state.transfers.get(number);
  if (!row || row.ended) return;
  if (!ask("cancel", { number }, { number })) return;
  row.cancel.disabled = true;
  row.status.textContent = "Cancelling…";
}

/** Sends `items` ([{ file, name }]) to the picked member or everyone: `upload`, then a PUT per file. */
function startUpload(items, to = state.recipient) {
  if (!items.length) return;
  if (!state.inRoom) { notify("Host or join a room first.", "error"); return; }
  const fields = { files: items.map(({ file, name }) => ({ name, size: file.size })) };
  if (to) fields.to = to;
  const id = ask("upload", fields);
  if (!id) return;
  const total = items.reduce((sum, item) => sum + item.file.size, 0);
  const member = state.members.get(to);
  const what = el("p", { class: "what", id: `upload-${id}` }, `Sending ${items.length === 1 ? "" : `${items.length} files: `}`,
    peerText(items.length === 1 ? items[0].name : items.map((i) => i.name).slice(0, 3).join(", ") + (items.length > 3 ? ", …" : ""), "file"),
    ` (${bytes(total)}) to `, member ? peerText(member.info.peer, "peer") : "everyone in the room");
  const progress = el("progress", { "aria-labelledby": `upload-${id}` });
  const status = el("p", { class: "status", text: "Preparing…" });
  const cancel = el("button", { type: "button", class: "cancel-upload", "aria-describedby": `upload-${id}`, text: "Cancel" });
  const row = el("li", { class: "upload", data: { upload: id } }, what, progress, status, cancel);
  const upload = { id, items, row, status, progress, cancel, uploadId: "", handedOver: false, controller: new AbortController() };
  cancel.addEventListener("click", () => upload.controller.abort());
  state.uploads.set(id, upload);
  $("transfers").prepend(row);
  updateTransfersEmpty();
  announce(`Preparing to send ${items.length} file${items.length === 1 ? "" : "s"}`);
}

// The page never holds a file's bytes: the File itself is the body, which the browser streams from disk.
async function putFiles(upload) {
  const { items } = upload;
  try {
    for (let index = 0; index < items.length; index += 1) {
      upload.status.textContent = `Preparing: handing over file ${index + 1} of ${items.length} (${bytes(items[index].file.size)})…`;
      const response = await fetch(`/transfers/${encodeURIComponent(upload.uploadId)}/${index}`, {
        method: "PUT",
        headers: { "Authorization": "Bearer " + token, "Content-Type": "application/octet-stream" },
        body: items[index].file,
        signal: upload.controller.signal,
      });
      if (!response.ok) throw new Error(`peermesh web did not take “${visible(items[index].name)}” (HTTP ${response.status}).`);
    }
    upload.handedOver = true;
    upload.cancel.remove();
    upload.progress.max = 1;
    upload.progress.value = 1;
    upload.status.textContent = "Handed over: the room sends it from here, and closing this page no longer stops it.";
    if (upload.orphaned) finishUpload(upload);
  } catch (error) {
    const cancelled = error?.name === "AbortError";
    // Aborted because the room already ended the upload (`done`, `failed`): that answer said it all.
    if (!upload.over) notify(cancelled ? "Sending cancelled: the files were not handed over." : `Could not send: ${error?.message ?? error}`, cancelled ? "notice" : "error");
    finishUpload(upload);
  }
}

function finishUpload(upload) {
  upload.row.remove();
  state.uploads.delete(upload.id);
  updateTransfersEmpty();
}

// ==== Picking and dropping files and folders

/** Files and folders of a drop as [{ file, name }], names being paths inside what was dropped. */
async function droppedFiles(transfer) {
  const items = [...(transfer.items ?? [])].filter((item) => item.kind === "file");
  // Entries and files must be taken now: the drop's data is gone once the handler awaits.
  const entries = items.map((item) => item.webkitGetAsEntry?.() ?? null);
  const files = items.map((item) => item.getAsFile());
  const out = [];
  for (let i = 0; i < items.length; i += 1) {
    if (entries[i]?.isDirectory) out.push(...await walk(entries[i]));
    else if (files[i]) out.push({ file: files[i], name: files[i].name });
  }
  if (!items.length) for (const file of transfer.files ?? []) out.push({ file, name: file.name });
  return out;
}

async function walk(directory) {
  const out = [];
  const reader = directory.createReader();
  // readEntries gives a directory in batches until an empty one.
  for (;;) {
    const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) return out;
    for (const entry of batch) {
      if (entry.isDirectory) out.push(...await walk(entry));
      else out.push({ file: await new Promise((resolve, reject) => entry.file(resolve, reject)), name: entry.fullPath.replace(/^\/+/, "") });
    }
  }
}

/** Lets `target` take dropped files and folders for `recipient()` (a peer_id, or "" for the picked one). */
function acceptDrops(target, recipient) {
  target.addEventListener("dragover", (event) => {
    if (!event.dataTransfer?.types?.includes("Files")) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
    target.classList.add("dragging");
  });
  target.addEventListener("dragleave", () => target.classList.remove("dragging"));
  target.addEventListener("drop", async (event) => {
    event.preventDefault();
    event.stopPropagation();
    target.classList.remove("dragging");
    const to = recipient() || state.recipient;
    try {
      const items = await droppedFiles(event.dataTransfer);
      if (!items.length) notify("Nothing to send there: the drop held no files (an empty folder?).", "error");
      startUpload(items, to);
    } catch (error) {
      notify(`Could not read what was dropped: ${error?.message ?? error}`, "error");
    }
  });
}

function pickedFiles(input, asFolder) {
  const items = [...input.files].map((file) => ({ file, name: (asFolder && file.webkitRelativePath) || file.name }));
  input.value = "";   // picking the same files again is a new send
  if (asFolder && !items.length) notify("That folder holds no files.", "error");
  startUpload(items);
}

// ==== Received files

function addReceived(ev) {
  const name = peerText(ev.file, "file");
  const href = typeof ev.href === "string" && ev.href.startsWith("/files/") ? ev.href : "";
  const link = href ? el("a", { download: "" }, name) : name;
  if (href) link.href = href;
  const item = el("li", {}, link, " from ", peerText(ev.peer, "peer"), el("span", { class: "saved", text: ev.path ? ` — saved as ${visible(ev.path)}` : "" }));
  $("received").prepend(item);
}

// ==== Events from the room

const handlers = new Map(Object.entries({
  hello(ev) {
    markOnce("peermesh-hello");
    state.replaying = true;
    state.ready = false;
    document.body.removeAttribute("data-ready");
    resetRoomState();
    if (ev.version !== 1) notify(`peermesh web speaks protocol version ${visible(ev.version)}; this page knows version 1.`, "error");
    state.me = { peer: ev.peer, peer_id: ev.peer_id };
    $("me-name").textContent = visible(ev.peer);
    $("me-line").hidden = false;
    $("downloads-line").textContent = ev.downloads ? `Files you accept are saved in ${visible(ev.downloads)}.` : "";
    if (ev.room || ev.room_host || ev.hosting) enterRoom(ev.room, ev.room_host_name); else showLobby();
  },
  ready() {
    state.replaying = false;
    state.ready = true;
    document.body.dataset.ready = "1";
    // When this page load first showed the room (tests read it: ready ≤ 300 ms after navigation).
    markOnce("peermesh-ready");
    setConnection("Connected");
    updateNobody();
    showNextOffer();
    if (!state.inRoom) browse();
  },
  hosting(ev) {
    enterRoom(ev.room, ev.host);
    logEvent(ev);
    announce(`You are hosting ${visible(ev.room)}`);
  },
  "joined-room"(ev) {
    enterRoom(ev.room, ev.host);
    logEvent(ev);
    announce(`You joined ${visible(ev.room || ev.host)}`);
  },
  "join-failed"(ev) { notify(`Could not join through ${visible(ev.peer)}: ${visible(ev.message)}`, "error"); logEvent(ev); },
  waiting(ev) { notify(visible(ev.text)); },
  "verification-code"(ev) { notify(visible(ev.text)); },
  "host-key"(ev) { notify(visible(ev.text)); logEvent(ev); },
  "known-name-other-key"(ev) { notify(visible(ev.text), "error"); logEvent(ev); },
  "join-code"(ev) {
    state.joinCode = String(ev.command ?? "");
    $("join-code").textContent = visible(state.joinCode);
    $("join-code-line").hidden = !state.joinCode;
  },
  "join-address"(ev) { logEvent(ev); },
  "discovery-off"(ev) {
    state.discoveryOff = visible(ev.message);
    for (const id of ["discovery-note", "room-discovery-note"]) {
      $(id).textContent = `Discovery is off, so nobody nearby sees the room by its name: ${state.discoveryOff}`;
      $(id).hidden = false;
    }
    notify(`Discovery is off: ${state.discoveryOff}`);
    logEvent(ev);
  },

  // Browse
  room(ev) { foundRoom(ev); },
  member(ev) { foundRoom(ev); },
  summary(ev) {
    if (ev.request && ev.request !== state.browseId) return;
    // What this look found replaces the list: rooms that went away go.
    if (state.found) { state.nearby = state.found; state.found = null; renderNearby(); }
    const none = state.nearby.size === 0;
    $("nearby-empty").hidden = !none;
    $("nearby-state").textContent = none ? "" : `${state.nearby.size} room${state.nearby.size === 1 ? "" : "s"} found.`;
  },

  // Members
  peer(ev) { upsertMember(ev, { code: ev.code, route: ev.route, encryption: ev.encryption }); },
  joined(ev) {
    upsertMember(ev, ev.code ? { code: ev.code, route: "direct", encryption: ev.encryption }
      : { code: "pending", route: "through the room", encryption: "verifying end to end…" });
    logEvent(ev);
    announce(`${visible(ev.peer)} joined`);
  },
  verified(ev) { upsertMember(ev, { code: ev.code, encryption: ev.encryption }); logEvent(ev); },
  left(ev) { removeMember(ev.peer_id); logEvent(ev); announce(visible(ev.text || `${ev.peer} left`)); },

  // Chat
  message(ev) { addChat(ev, false); },
  said(ev) { addChat(ev, true); },
  delivered(ev) {
    const row = state.chatRows.get(ev.request);
    if (row) row.append(el("span", { class: "delivered", text: ` — delivered to ${Number(ev.to) || 0}` })); else logEvent(ev);
  },

  // Questions
  question: addQuestion,
  "question-waiting": addQuestion,
  answered: endQuestion,
  "request-expired": endQuestion,

  // Transfers
  progress: onProgress,
  transfer(ev) {
    const row = transferRow(Number(ev.number), ev);
    if (row) row.status.textContent = ev.interrupted ? "Interrupted: it goes on when the member is back."
      : `${bytes(row.done)} of ${bytes(row.bytes)}`;
  },
  "file-started"(ev) {
    transferRow(Number(ev.number), ev);
    logEvent(ev);
  },
  "file-waiting"(ev) {
    const row = transferRow(Number(ev.number), { ...ev, direction: "sending" });
    if (row) row.status.textContent = `Waiting for ${visible(ev.peer)} to answer…`;
    logEvent(ev);
  },
  "file-resumed"(ev) { logEvent(ev); },
  "file-interrupted"(ev) { finishRow(Number(ev.number), "Interrupted: it resumes if the member comes back.", "interrupted"); logEvent(ev); },
  "file-received"(ev) {
    finishRow(Number(ev.number), "Received (SHA-256 verified)", "received");
    addReceived(ev);
    announce(`Received ${clip(visible(ev.file), 80)} from ${clip(visible(ev.peer), 80)}`);
    if (!state.replaying) logEvent(ev);
  },
  "file-cancelled"(ev) {
    finishRow(Number(ev.number), `Cancelled by ${visible(ev.by || ev.peer)}`, "cancelled");
    logEvent(ev);
    announce(visible(ev.text || "Cancelled"));
  },
  "file-failed"(ev) {
    finishRow(Number(ev.number), `Failed: ${visible(ev.message)}`, "failed");
    notify(visible(ev.text || `Failed: ${ev.message}`), "error");
    logEvent(ev);
  },
  "transfer-ended"(ev) {
    const row = state.transfers.get(Number(ev.number));
    if (row) endRow(row);
  },
  "file-sending"(ev) {
    const upload = state.uploads.get(ev.request);
    if (upload) upload.status.textContent = `Offered to ${Number(ev.to) || 0} member(s); progress below.`;
    logEvent(ev);
  },
  "file-sent"(ev) { logEvent(ev); announce(visible(ev.text || "Sent")); },
  upload(ev) {
    const upload = state.uploads.get(ev.request);
    if (!upload || upload.uploadId) return;
    upload.uploadId = String(ev.upload ?? "");
    putFiles(upload);
  },

  // Answers
  error(ev) {
    notify(visible(ev.message || ev.text || "Something went wrong."), "error");
    logEvent(ev);
    const upload = state.uploads.get(ev.request);
    if (upload) upload.status.textContent = `Failed: ${visible(ev.message)}`;
  },
  failed(ev) {
    const asked = state.requests.get(ev.request);
    state.requests.delete(ev.request);
    const what = { join: "Joining", host: "Hosting", upload: "Sending", say: "The message", answer: "The answer",
      cancel: "Cancelling", browse: "Looking for rooms", leave: "Leaving" }[asked?.kind] ?? "The request";
    notify(`${what} failed: ${visible(ev.message || ev.text || "no reason given")}`, "error");
    settle(ev.request, asked, false);
  },
  done(ev) {
    const asked = state.requests.get(ev.request);
    state.requests.delete(ev.request);
    settle(ev.request, asked, true);
  },
}));

/** What the page does once request `id` is over (`done`, or `failed` when !ok). */
function settle(id, asked, ok) {
  switch (asked?.kind) {
    case "browse":
      if (state.browseId === id) {
        if (state.found) handlers.get("summary")({ request: id });
        state.browseId = null;
        $("browse-button").disabled = false;
        if (!state.inRoom && state.ready) browseTimer = setTimeout(browse, BROWSE_EVERY_MS);
      }
      break;
    case "join": case "host":
      if (!state.inRoom) setJoining(false);
      break;
    case "upload": {
      const upload = state.uploads.get(id);
      if (upload) { upload.over = true; upload.controller.abort(); finishUpload(upload); }
      break;
    }
    case "answer": {
      const offer = state.offers.get(asked.number);
      if (offer && !ok) { offer.answering = false; showNextOffer(); }
      break;
    }
    case "cancel": {
      const row = state.transfers.get(asked.number);
      if (row && !ok && !row.ended) row.cancel.disabled = false;
      break;
    }
    case "leave":
      if (!ok) leaving = false;
      break;
  }
}

// ==== Start

function wire() {
  $("host-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const room = $("host-name").value.trim();
    if (!room) { notify("Give the room a name.", "error"); return; }
    if (ask("host", { room })) setJoining(true);
  });
  $("join-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const room = $("join-name").value.trim();
    if (!room) { notify("Type the room's name or code.", "error"); return; }
    joinRoom(room);
  });
  $("browse-button").addEventListener("click", () => { $("browse-button").disabled = true; browse(); });
  $("chat-form").addEventListener("submit", sendChat);
  $("recipient-everyone").addEventListener("change", () => pick(""));
  $("file-input").addEventListener("change", () => pickedFiles($("file-input"), false));
  $("folder-input").addEventListener("change", () => pickedFiles($("folder-input"), true));
  const zone = $("drop-zone");
  zone.addEventListener("click", () => $("file-input").click());
  zone.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") { event.preventDefault(); $("file-input").click(); }
  });
  acceptDrops(zone, () => "");
  // A file dropped anywhere else must not make the browser leave the page to show it.
  for (const type of ["dragover", "drop"]) window.addEventListener(type, (event) => event.preventDefault());
  $("offer-accept").addEventListener("click", () => answerOffer(true, false));
  $("offer-decline").addEventListener("click", () => answerOffer(false, false));
  $("offer-always").addEventListener("click", () => answerOffer(true, true));
  $("leave").addEventListener("click", () => { if (ask("leave")) { leaving = true; setConnection("Leaving…"); } });
  $("reconnect").addEventListener("click", () => { failures = 0; $("main").inert = false; connect(); });
}

const token = takeToken();
wire();
if (token) {
  setView("lobby");
  $("lobby").hidden = true;   // until `hello` says where we are
  connect();
} else {
  setView("no-token");
  setConnection("Not connected");
}
