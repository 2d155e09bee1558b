// The trace and trajectory viewers: step through the embedded data.
// Location hash "#trace=ID&frame=N" (1-based) opens a trace at a frame.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("viewer-data").textContent);
  function el(id) { return document.getElementById(id); }
  function fill(select, items) {
    items.forEach(function (it, i) {
      var o = document.createElement("option");
      o.value = String(i);
      o.textContent = it.id;
      select.appendChild(o);
    });
  }

  var tv = { t: 0, f: 0 };
  function showTrace(t, f) {
    var traces = data.traces;
    if (!traces.length || !el("trace-viewer")) { return; }
    tv.t = Math.min(Math.max(t, 0), traces.length - 1);
    var tr = traces[tv.t];
    tv.f = Math.min(Math.max(f, 0), tr.frames.length - 1);
    var fr = tr.frames[tv.f];
    el("trace-select").value = String(tv.t);
    el("trace-frame").value = String(tv.f + 1);
    el("trace-pos").textContent = "frame " + (tv.f + 1) + " of " + tr.frames.length + (tr.cut ? " (cut)" : "");
    var ev = fr.event + (fr.line ? " at line " + fr.line : "") + ", depth " + fr.depth;
    if (fr.arg) { ev += ", value " + fr.arg; }
    el("trace-event").textContent = ev;
    var body = el("trace-locals").tBodies[0];
    body.textContent = "";
    fr.locals.forEach(function (l) {
      var row = body.insertRow();
      row.insertCell().textContent = l[0];
      row.insertCell().textContent = l[1];
    });
    var src = el("trace-source");
    src.textContent = "";
    tr.context.forEach(function (line, i) {
      var span = document.createElement("span");
      span.textContent = line + "\n";
      if (fr.line === i + 1) { span.className = "current"; }
      src.appendChild(span);
    });
  }

  var jv = { t: 0, m: 0 };
  function showTraj(t, m) {
    var trajs = data.trajectories;
    if (!trajs.length || !el("traj-viewer")) { return; }
    jv.t = Math.min(Math.max(t, 0), trajs.length - 1);
    var tj = trajs[jv.t];
    if (!tj.messages.length) { el("traj-pos").textContent = "no messages"; return; }
    jv.m = Math.min(Math.max(m, 0), tj.messages.length - 1);
    var msg = tj.messages[jv.m];
    el("traj-select").value = String(jv.t);
    el("traj-pos").textContent = "message " + (jv.m + 1) + " of " + tj.messages.length +
      (tj.reward === null ? "" : ", reward " + tj.reward);
    el("traj-role").textContent = msg[0];
    el("traj-message").textContent = msg[1];
  }

  if (el("trace-viewer")) {
    fill(el("trace-select"), data.traces);
    el("trace-select").addEventListener("change", function (e) { showTrace(Number(e.target.value), 0); });
    el("trace-prev").addEventListener("click", function () { showTrace(tv.t, tv.f - 1); });
    el("trace-next").addEventListener("click", function () { showTrace(tv.t, tv.f + 1); });
    el("trace-frame").addEventListener("change", function (e) { showTrace(tv.t, Number(e.target.value) - 1); });
    var h = new URLSearchParams(location.hash.slice(1));
    var t0 = 0;
    data.traces.forEach(function (tr, i) { if (tr.id === h.get("trace")) { t0 = i; } });
    showTrace(t0, h.has("frame") ? Number(h.get("frame")) - 1 : 0);
  }
  if (el("traj-viewer")) {
    fill(el("traj-select"), data.trajectories);
    el("traj-select").addEventListener("change", function (e) { showTraj(Number(e.target.value), 0); });
    el("traj-prev").addEventListener("click", function () { showTraj(jv.t, jv.m - 1); });
    el("traj-next").addEventListener("click", function () { showTraj(jv.t, jv.m + 1); });
    showTraj(0, 0);
  }
})();
