// askdocs page: asks POST /ask and renders its SSE stream (DESIGN.md §4).
// Plain browser JavaScript, no build step. Every piece of document or model
// text reaches the DOM through textContent / text nodes, never innerHTML.
"use strict";

(() => {
  const API_KEY_STORAGE = "askdocs.apiKey";
  const $ = (id) => document.getElementById(id);
  const ui = {
    form: $("ask-form"),
    question: $("question"),
    k: $("k"),
    apiKey: $("api-key"),
    forgetKey: $("forget-key"),
    ask: $("ask-button"),
    stop: $("stop-button"),
    status: $("status"),
    notice: $("notice"),
    answerSection: $("answer-section"),
    answer: $("answer"),
    summary: $("answer-summary"),
    legend: $("legend"),
    detailsList: $("details-list"),
    sources: $("sources"),
    passage: $("passage"),
    passageHeading: $("passage-heading"),
    passageClose: $("passage-close"),
    passageSource: $("passage-source"),
    passageScores: $("passage-scores"),
    passageText: $("passage-text"),
  };

  // ---------------------------------------------------------------- SSE ---

  /** Incremental text/event-stream parser (WHATWG "event stream
   * interpretation"): accepts arbitrary chunks, so an event, a line or a CRLF
   * split across network reads is reassembled before it is dispatched. */
  class SSEParser {
    constructor(onEvent) {
      this.onEvent = onEvent;
      this.buffer = "";
      this.eventName = "";
      this.data = [];
    }

    push(chunk) {
      this.buffer += chunk;
      const buf = this.buffer;
      let lineStart = 0;
      let i = 0;
      while (i < buf.length) {
        const c = buf[i];
        if (c !== "\n" && c !== "\r") { i += 1; continue; }
        // A CR as the last character may be the first half of a CRLF: wait.
        if (c === "\r" && i + 1 === buf.length) break;
        this.line(buf.slice(lineStart, i));
        i += c === "\r" && buf[i + 1] === "\n" ? 2 : 1;
        lineStart = i;
      }
      this.buffer = buf.slice(lineStart);
    }

    /** The stream ended: an event without its closing blank line is dropped, as the spec says. */
    end() {
      if (this.buffer === "\r") this.line("");
      this.buffer = "";
    }

    line(text) {
      if (text === "") { this.dispatch(); return; }
      if (text[0] === ":") return; // comment / keep-alive
      const colon = text.indexOf(":");
      const field = colon === -1 ? text : text.slice(0, colon);
      let value = colon === -1 ? "" : text.slice(colon + 1);
      if (value[0] === " ") value = value.slice(1);
      if (field === "event") this.eventName = value;
      else if (field === "data") this.data.push(value);
    }

    dispatch() {
      if (this.data.length > 0) this.onEvent(this.eventName || "message", this.data.join("\n"));
      this.eventName = "";
      this.data = [];
    }
  }

  // ------------------------------------------------------ text helpers ---

  const MARKER = /^\[\s*(\d+(?:\s*,\s*\d+)*)\s*\]/;
  // What a marker may look like before its closing bracket has arrived.
  const MARKER_PREFIX = /^\[\s*(?:\d+\s*(?:,\s*(?:\d+\s*)?)*)?$/;

  /** Splits text into plain runs and citation markers ([1], [1, 2], [1][2]).
   * With `final` false, a trailing run that may still grow into a marker is
   * returned as `rest` instead of being emitted. */
  function tokenize(text, final) {
    const parts = [];
    let plain = "";
    let i = 0;
    while (i < text.length) {
      const open = text.indexOf("[", i);
      if (open === -1) { plain += text.slice(i); i = text.length; break; }
      plain += text.slice(i, open);
      const tail = text.slice(open);
      const m = MARKER.exec(tail);
      if (m) {
        if (plain) { parts.push({ text: plain }); plain = ""; }
        for (const n of m[1].split(",")) parts.push({ cite: Number(n.trim()) });
        i = open + m[0].length;
      } else if (!final && MARKER_PREFIX.test(tail)) {
        if (plain) parts.push({ text: plain });
        return { parts, rest: tail };
      } else {
        plain += "[";
        i = open + 1;
      }
    }
    if (plain) parts.push({ text: plain });
    return { parts, rest: "" };
  }

  // A sentence ends at . ! or ? (plus closing quotes/brackets and any citation
  // markers that follow) before whitespace or the end of the text: the same
  // rule as deployments/citations.py split_sentences, whose 0-based indexes
  // `unsupported_sentences` holds (tests/web checks the two agree).
  const SENTENCE_END = /[.!?]+["')\]]*(?:\s*\[\s*\d+(?:\s*,\s*\d+)*\s*\])*(?=\s|$)/g;

  /** Splits an answer into sentences (0-based, matching `unsupported_sentences`)
   * and the whitespace between them; joined back they give the answer. */
  function splitSentences(text) {
    const pieces = [];
    let start = 0;
    let index = 0;
    const pushSentence = (end) => {
      const chunk = text.slice(start, end);
      const lead = chunk.match(/^\s*/)[0];
      if (lead) pieces.push({ text: lead, index: null });
      if (chunk.length > lead.length) pieces.push({ text: chunk.slice(lead.length), index: index++ });
      start = end;
    };
    SENTENCE_END.lastIndex = 0;
    let m;
    while ((m = SENTENCE_END.exec(text)) !== null) pushSentence(m.index + m[0].length);
    if (start < text.length) pushSentence(text.length);
    return pieces;
  }

  function el(tag, attrs = {}, text) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs)) {
      if (name === "class") node.className = value;
      else node.setAttribute(name, value);
    }
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fmtNumber(value, digits) {
    return typeof value === "number" && Number.isFinite(value) ? value.toFixed(digits) : "–";
  }

  function fmtMs(value) {
    if (typeof value !== "number" || !Number.isFinite(value)) return "–";
    return value < 10 ? `${value.toFixed(1)} ms` : `${Math.round(value)} ms`;
  }

  function plural(n, one, many) { return `${n} ${n === 1 ? one : many}`; }

  // ------------------------------------------------------- page state ---

  let sources = [];           // the `sources` event, indexed by n
  let invalidCitations = new Set();
  let streamedText = "";      // every token so far
  let pendingMarker = "";     // a trailing "[1" waiting for its "]"
  let openCitation = null;    // { n, trigger } of the passage on show
  let controller = null;      // AbortController of the request in flight

  function sourceByN(n) { return sources.find((s) => s.n === n); }

  function citeButton(n) {
    const invalid = invalidCitations.has(n) || !sourceByN(n);
    const label = invalid
      ? `Citation ${n}: invalid, no passage ${n} was returned`
      : `Citation ${n}: open passage ${n}`;
    const button = el("button", {
      type: "button",
      class: invalid ? "cite cite-invalid" : "cite",
      "data-cite": String(n),
      "aria-label": label,
      "aria-controls": "passage",
      "aria-expanded": "false",
    }, `[${n}]`);
    return button;
  }

  function appendParts(container, parts) {
    for (const part of parts) {
      if (part.cite !== undefined) { container.append(citeButton(part.cite)); continue; }
      const last = container.lastChild;
      if (last && last.nodeType === Node.TEXT_NODE) last.appendData(part.text);
      else container.append(document.createTextNode(part.text));
    }
  }

  function setStatus(text) { ui.status.textContent = text; }

  /** Shows one notice; `lines` are plain strings (never markup). */
  function showNotice(kind, title, lines = []) {
    ui.notice.replaceChildren(el("p", { class: "notice-title" }, title), ...lines.map((l) => el("p", {}, l)));
    ui.notice.className = `notice notice-${kind}`;
    ui.notice.dataset.kind = kind;
    ui.notice.hidden = false;
  }

  function clearNotice() {
    ui.notice.hidden = true;
    ui.notice.replaceChildren();
    delete ui.notice.dataset.kind;
  }

  function resetAnswer() {
    sources = [];
    invalidCitations = new Set();
    streamedText = "";
    pendingMarker = "";
    closePassage(false);
    ui.answer.setAttribute("aria-live", "polite");
    ui.answer.classList.remove("refused");
    ui.answer.replaceChildren();
    ui.answer.dataset.state = "streaming";
    ui.summary.hidden = true;
    ui.legend.hidden = true;
    ui.sources.replaceChildren(el("li", { class: "placeholder" }, "Searching…"));
    setDetails([["Status", "waiting for the answer"]]);
  }

  function setDetails(rows) {
    const items = [];
    for (const [term, value] of rows) {
      items.push(el("dt", {}, term), el("dd", {}, value));
    }
    ui.detailsList.replaceChildren(...items);
  }

  // ---------------------------------------------------------- sources ---

  function renderSources(list) {
    sources = Array.isArray(list) ? list : [];
    if (sources.length === 0) {
      ui.sources.replaceChildren(el("li", { class: "placeholder" }, "No passages were retrieved."));
      return;
    }
    ui.sources.replaceChildren(...sources.map((s) => {
      const button = el("button", {
        type: "button", class: "source-button", "data-source": String(s.n),
        "aria-controls": "passage", "aria-expanded": "false",
      });
      const label = el("span", { class: "source-label" });
      label.append(
        el("span", { class: "source-title" }, s.title || s.source || `Passage ${s.n}`),
        el("span", { class: "source-path" }, s.anchor ? `${s.source}#${s.anchor}` : String(s.source ?? "")),
      );
      button.append(el("span", { class: "source-n" }, `[${s.n}]`), label);
      const item = el("li");
      item.append(button);
      return item;
    }));
  }

  function markExpanded(n) {
    for (const b of document.querySelectorAll("[data-cite], [data-source]")) {
      const bn = Number(b.dataset.cite ?? b.dataset.source);
      b.setAttribute("aria-expanded", String(n !== null && bn === n));
    }
  }

  function openPassage(n, trigger) {
    const s = sourceByN(n);
    openCitation = { n, trigger };
    ui.passage.hidden = false;
    if (!s || invalidCitations.has(n)) {
      ui.passageHeading.textContent = `[${n}] Invalid citation`;
      ui.passageSource.textContent = "no such passage";
      ui.passageScores.replaceChildren();
      ui.passageText.replaceChildren(el("p", { class: "passage-invalid" },
        `The answer cites [${n}], but only ${plural(sources.length, "passage was", "passages were")} returned. ` +
        "Nothing backs this citation."));
    } else {
      ui.passageHeading.textContent = `[${n}] ${s.title || s.source}`;
      ui.passageSource.textContent = s.anchor ? `${s.source}#${s.anchor}` : String(s.source ?? "");
      const score = (name, value) => {
        const row = el("div");
        row.append(el("dt", {}, name), el("dd", {}, value));
        return row;
      };
      ui.passageScores.replaceChildren(
        score("cosine", fmtNumber(s.cosine, 3)),
        score("bm25", fmtNumber(s.bm25, 2)),
        score("fusion", fmtNumber(s.fusion, 3)),
      );
      ui.passageText.textContent = String(s.text ?? "");
    }
    markExpanded(n);
    ui.passageHeading.focus();
  }

  function closePassage(returnFocus = true) {
    ui.passage.hidden = true;
    markExpanded(null);
    const trigger = openCitation && openCitation.trigger;
    openCitation = null;
    if (returnFocus && trigger && trigger.isConnected) trigger.focus();
  }

  // ----------------------------------------------------------- answer ---

  function appendTokens(text) {
    streamedText += text;
    const { parts, rest } = tokenize(pendingMarker + text, false);
    pendingMarker = rest;
    appendParts(ui.answer, parts);
  }

  function renderFinalAnswer(done) {
    invalidCitations = new Set(done.invalid_citations || []);
    const unsupported = new Set(done.unsupported_sentences || []);
    const answer = typeof done.answer === "string" ? done.answer : streamedText;
    // Rebuilt in one go; silence the live region so it is not read twice,
    // the status line announces the outcome instead.
    ui.answer.setAttribute("aria-live", "off");
    ui.answer.replaceChildren();
    if (done.refused) {
      ui.answer.classList.add("refused");
      ui.answer.textContent = answer;
      return;
    }
    for (const piece of splitSentences(answer)) {
      const { parts } = tokenize(piece.text, true);
      if (piece.index !== null && unsupported.has(piece.index)) {
        const mark = el("mark", { class: "unsupported", "data-sentence": String(piece.index) });
        mark.append(el("span", { class: "visually-hidden" }, "Unsupported sentence: "));
        appendParts(mark, parts);
        ui.answer.append(mark);
      } else {
        appendParts(ui.answer, parts);
      }
    }
  }

  function summarize(done) {
    const citations = done.citations || [];
    const bits = [plural(citations.length, "citation", "citations")];
    const invalid = (done.invalid_citations || []).length;
    const unsupported = (done.unsupported_sentences || []).length;
    if (invalid) bits.push(plural(invalid, "invalid citation", "invalid citations"));
    if (unsupported) bits.push(plural(unsupported, "unsupported sentence", "unsupported sentences"));
    if (typeof done.support === "number") bits.push(`support ${done.support.toFixed(2)}`);
    if (done.truncated) bits.push("truncated at the token limit");
    ui.summary.textContent = bits.join(" · ");
    ui.summary.hidden = false;
    ui.legend.hidden = !(invalid || unsupported);
  }

  function timingRows(done, clientTtftMs) {
    const t = done.timings || {};
    const u = done.usage || {};
    const rows = [
      ["Trace id", done.trace_id || "–"],
      ["Retrieval", fmtMs(t.retrieval_ms)],
      ["Gate", fmtMs(t.gate_ms)],
      ["Time to first token (server)", fmtMs(t.ttft_ms)],
      ["Generation", fmtMs(t.generation_ms)],
      ["Total (server)", fmtMs(t.total_ms)],
      ["First token seen by this page", fmtMs(clientTtftMs)],
      ["Prompt tokens", String(u.prompt_tokens ?? "–")],
      ["Completion tokens", String(u.completion_tokens ?? "–")],
    ];
    if (typeof done.cost_usd === "number") rows.push(["Cost", `$${done.cost_usd.toFixed(6)}`]);
    if (typeof done.support === "number") rows.push(["Support", done.support.toFixed(3)]);
    return rows;
  }

  function onDone(done, clientTtftMs) {
    renderFinalAnswer(done);
    ui.answer.dataset.state = done.refused ? "refused" : "done";
    setDetails(timingRows(done, clientTtftMs));
    if (done.refused) {
      ui.summary.hidden = true;
      ui.legend.hidden = true;
      if (done.refusal_stage === "gate") {
        showNotice("refusal", "Refused before the model was asked (relevance gate).",
          ["No retrieved passage was relevant enough to answer from, so no answer was generated. " +
           "Try rephrasing, or ask about something the documents cover."]);
      } else {
        showNotice("refusal", "The model declined to answer.",
          ["It judged that the retrieved passages do not contain the answer."]);
      }
      setStatus(done.refusal_stage === "gate" ? "Refused by the relevance gate." : "Refused by the model.");
      return;
    }
    summarize(done);
    if ((done.invalid_citations || []).length || (done.unsupported_sentences || []).length) {
      showNotice("info", "Check the highlighted parts.",
        ["Some citations or sentences could not be matched to the passages; see the legend under the answer."]);
    }
    const total = done.timings && done.timings.total_ms;
    setStatus(typeof total === "number" ? `Answer complete in ${fmtMs(total)}.` : "Answer complete.");
  }

  function onStreamError(err, hadTokens) {
    const where = err.stage ? ` during ${err.stage}` : "";
    const lines = [String(err.message || "The server reported an error.")];
    if (err.trace_id) lines.push(`Trace id: ${err.trace_id}`);
    if (typeof err.partial === "string" && err.partial && !hadTokens) appendTokens(err.partial);
    if (hadTokens || err.partial) {
      appendParts(ui.answer, tokenize(pendingMarker, true).parts);
      pendingMarker = "";
      ui.answer.append(el("span", { class: "partial-note" }, "(partial answer: the stream stopped early)"));
    }
    ui.answer.dataset.state = "error";
    setDetails([["Trace id", err.trace_id || "–"], ["Failed stage", err.stage || "–"]]);
    showNotice("error", `The answer failed${where}.`, lines);
    setStatus("The answer failed.");
  }

  // ------------------------------------------------------ HTTP errors ---

  function retryAfterSeconds(header) {
    if (!header) return null;
    const value = header.trim();
    if (/^\d+$/.test(value)) return Number(value);
    const date = Date.parse(value);
    return Number.isNaN(date) ? null : Math.max(0, Math.ceil((date - Date.now()) / 1000));
  }

  async function errorMessage(resp) {
    const body = await resp.text().catch(() => "");
    try {
      const json = JSON.parse(body);
      if (json && json.error && json.error.message) return String(json.error.message);
      if (json && typeof json.detail === "string") return json.detail;
      if (json && Array.isArray(json.detail)) {
        return json.detail.map((d) => [d.loc && d.loc.slice(-1)[0], d.msg].filter(Boolean).join(": ")).join("; ");
      }
      if (json && typeof json.message === "string") return json.message;
    } catch { /* not JSON: fall through to the text */ }
    return body.trim().slice(0, 500);
  }

  async function onHttpError(resp, sentKey) {
    const detail = await errorMessage(resp);
    ui.answer.dataset.state = "error";
    ui.answer.replaceChildren();
    ui.sources.replaceChildren(el("li", { class: "placeholder" }, "No passages."));
    setDetails([["HTTP status", String(resp.status)]]);
    if (resp.status === 503) {
      const seconds = retryAfterSeconds(resp.headers.get("Retry-After"));
      const when = seconds === null
        ? "Please try again in a moment."
        : `Retry after ${plural(seconds, "second", "seconds")}.`;
      showNotice("busy", "The service is at capacity (503).", [when, ...(detail ? [detail] : [])]);
      ui.notice.dataset.retryAfter = seconds === null ? "" : String(seconds);
      setStatus("Busy: not answered.");
    } else if (resp.status === 401) {
      showNotice("error", "An API key is needed (401).", [sentKey
        ? "The server did not accept the API key you entered. Check it and ask again."
        : "This server requires an API key. Enter it in the API key field and ask again."]);
      setStatus("Not authorized.");
      ui.apiKey.focus();
    } else if (resp.status === 413 || resp.status === 422) {
      showNotice("error", `The question was not accepted (${resp.status}).`, [detail || "Check the question and k."]);
      setStatus("Not accepted.");
    } else {
      showNotice("error", `The server answered with an error (${resp.status}).`, [detail || resp.statusText]);
      setStatus("The request failed.");
    }
  }

  // ----------------------------------------------------------- ask ---

  async function ask() {
    const question = ui.question.value.trim();
    if (!question) {
      showNotice("error", "Please type a question first.");
      ui.question.focus();
      return;
    }
    const body = { question };
    if (ui.k.value !== "") {
      const k = Number(ui.k.value);
      if (!Number.isInteger(k) || k < 1 || k > 20) {
        showNotice("error", "k must be a whole number from 1 to 20, or left empty.");
        ui.k.focus();
        return;
      }
      body.k = k;
    }
    const key = ui.apiKey.value.trim();
    const headers = { "Content-Type": "application/json", Accept: "text/event-stream" };
    if (key) headers.Authorization = `Bearer ${key}`;

    clearNotice();
    resetAnswer();
    controller = new AbortController();
    ui.ask.disabled = true;
    ui.stop.disabled = false;
    setStatus("Searching the documents…");
    const started = performance.now();
    let clientTtftMs = null;
    let terminal = false;
    let tokenCount = 0;

    const handle = (event, data) => {
      let payload;
      try { payload = JSON.parse(data); } catch { return; }
      if (event === "sources") {
        renderSources(payload.sources);
        setStatus("Writing the answer…");
      } else if (event === "token") {
        if (clientTtftMs === null) clientTtftMs = performance.now() - started;
        tokenCount += 1;
        ui.answer.dataset.tokens = String(tokenCount);
        appendTokens(String(payload.text ?? ""));
      } else if (event === "done") {
        terminal = true;
        onDone(payload, clientTtftMs);
      } else if (event === "error") {
        terminal = true;
        onStreamError(payload, tokenCount > 0);
      }
    };

    try {
      const resp = await fetch("/ask", {
        method: "POST", headers, body: JSON.stringify(body), signal: controller.signal,
      });
      if (!resp.ok) { await onHttpError(resp, Boolean(key)); return; }
      const parser = new SSEParser(handle);
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
      }
      parser.end();
      if (!terminal) {
        onStreamError({ stage: "connection", message: "The connection closed before the answer finished." },
          tokenCount > 0);
      }
    } catch (exc) {
      if (exc && exc.name === "AbortError") {
        ui.answer.dataset.state = "stopped";
        showNotice("info", "Stopped.", ["The request was cancelled; the server stops generating."]);
        setStatus("Stopped.");
      } else {
        onStreamError({ stage: "connection", message: `Could not reach the server (${exc && exc.message}).` },
          tokenCount > 0);
      }
    } finally {
      controller = null;
      ui.ask.disabled = false;
      ui.stop.disabled = true;
    }
  }

  // ----------------------------------------------------------- wiring ---

  ui.apiKey.value = sessionStorage.getItem(API_KEY_STORAGE) || "";
  ui.apiKey.addEventListener("input", () => {
    const key = ui.apiKey.value.trim();
    if (key) sessionStorage.setItem(API_KEY_STORAGE, key);
    else sessionStorage.removeItem(API_KEY_STORAGE);
  });
  ui.forgetKey.addEventListener("click", () => {
    sessionStorage.removeItem(API_KEY_STORAGE);
    ui.apiKey.value = "";
    setStatus("API key forgotten.");
    ui.apiKey.focus();
  });

  ui.form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (!controller) ask();
  });
  ui.question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      ui.form.requestSubmit();
    }
  });
  ui.stop.addEventListener("click", () => { if (controller) controller.abort(); });

  // Citation and source buttons are created per answer: one delegated listener.
  document.addEventListener("click", (event) => {
    const target = event.target instanceof Element ? event.target.closest("[data-cite], [data-source]") : null;
    if (!target) return;
    openPassage(Number(target.dataset.cite ?? target.dataset.source), target);
  });
  ui.passageClose.addEventListener("click", () => closePassage(true));
  ui.passage.addEventListener("keydown", (event) => {
    if (event.key === "Escape") { event.preventDefault(); closePassage(true); }
  });

  // Exposed for the browser test of the parser's chunk handling.
  window.askdocs = { SSEParser, tokenize, splitSentences };
})();
