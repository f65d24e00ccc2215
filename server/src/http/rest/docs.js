// The "Try it" forms of /docs: each sends its request with fetch and shows
// the answer. Served as /docs.js (the page's CSP allows no inline script).
document.addEventListener('submit', async (ev) => {
  const form = ev.target;
  if (!form.dataset || !form.dataset.method) return;
  ev.preventDefault();
  const out = form.querySelector('.out');
  const init = { method: form.dataset.method, headers: { accept: 'application/json' } };
  if (form.body) {
    init.headers['content-type'] = 'application/json';
    init.body = form.body.value;
  }
  out.textContent = '…';
  try {
    const r = await fetch(form.path.value, init);
    const text = await r.text();
    let shown = text;
    try { shown = JSON.stringify(JSON.parse(text), null, 2); } catch (_) {}
    out.textContent = 'HTTP ' + r.status + '\n' + shown;
  } catch (e) {
    out.textContent = 'Network error: ' + e;
  }
});
