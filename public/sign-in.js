// The token sign-in form (/ui/sign-in, auth mode `tokens`). State-changing
// requests must be JSON (cross-site protection), so the form is sent with
// fetch rather than as a form post.
(function () {
  const form = document.getElementById('sign-in');
  if (!form) return;
  const error = document.getElementById('sign-in-error');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    error.hidden = true;
    const token = document.getElementById('token').value;
    try {
      const resp = await fetch('/ui/sign-in', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ token, next: form.dataset.next || '/' }),
        credentials: 'same-origin',
      });
      const body = await resp.json().catch(() => ({}));
      if (resp.ok) {
        window.location.assign(body.next || '/');
        return;
      }
      error.textContent = body.error || `Sign-in failed (HTTP ${resp.status})`;
    } catch (e) {
      error.textContent = 'The agent cannot be reached.';
    }
    error.hidden = false;
  });
})();
