// The portal's progressive script (issue 9): the slug of a tenant request is checked as it is
// typed (the spec's rule and whether it is taken, by GET /portal/slug-check); the server checks it
// again when the form is sent, so without this script nothing is lost but the early hint.
'use strict'

const slug = document.getElementById('slug')
const hint = document.getElementById('slug-check')
let timer = null
let asked = ''

async function check() {
  const value = slug.value.trim()
  if (value === '' || value === asked) return
  asked = value
  try {
    const answer = await fetch(`/portal/slug-check?slug=${encodeURIComponent(value)}`, {
      credentials: 'same-origin',
      headers: { accept: 'application/json' },
    })
    if (!answer.ok || value !== slug.value.trim()) return
    const result = await answer.json()
    slug.setCustomValidity(result.available ? '' : `${value}: ${result.problem}`)
    slug.setAttribute('aria-invalid', result.available ? 'false' : 'true')
    hint.textContent = result.available ? `${value} is available.` : `${value}: ${result.problem}`
    hint.className = result.available ? 'hint good' : 'hint bad'
  } catch {
    // No answer: the server checks the slug when the form is sent.
  }
}

if (slug !== null && hint !== null) {
  slug.addEventListener('input', () => {
    clearTimeout(timer)
    timer = setTimeout(check, 250)
  })
}
