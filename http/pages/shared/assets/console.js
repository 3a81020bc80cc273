// The console's progressive script (issue 9). Every page works without it; with it, the copy
// buttons of a new key copy their field, and the restore status updates itself while a restore runs.
'use strict'

for (const button of document.querySelectorAll('button.copy[data-copy]')) {
  const field = document.getElementById(button.dataset.copy)
  if (field === null) continue
  button.hidden = false
  const label = button.firstChild
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(field.value)
    } catch {
      field.select()
      document.execCommand('copy')
    }
    label.textContent = 'Copied'
    setTimeout(() => {
      label.textContent = 'Copy'
    }, 2000)
  })
}

const restore = document.getElementById('restore-status')

function restoreText(status) {
  switch (status.status) {
    case 'idle':
      return 'No restore has run.'
    case 'in_progress':
      return `Restoring ${status.backup_id} since ${status.started_at}: writes answer 503 until it ends.`
    case 'completed':
      return `Restored ${status.backup_id} at ${status.completed_at}.`
    default:
      return `The restore of ${status.backup_id} failed: ${status.error ?? 'unknown error'}.`
  }
}

async function pollRestore() {
  try {
    const answer = await fetch(restore.dataset.statusUrl, {
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
    })
    if (answer.ok) {
      const status = await answer.json()
      restore.dataset.status = status.status
      restore.className = `status-${status.status}`
      restore.textContent = restoreText(status)
    }
  } catch {
    // A network hiccup: the next poll tries again.
  }
  if (restore.dataset.status === 'in_progress') setTimeout(pollRestore, 1000)
}

if (restore !== null && restore.dataset.status === 'in_progress') setTimeout(pollRestore, 500)
