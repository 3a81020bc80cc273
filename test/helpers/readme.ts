/**
 * Reads the README's shell examples as a newcomer copies them: the fenced code blocks of a section,
 * and each `curl` command in them as the equivalent fetch request. Only what the examples use is
 * understood (-s, -H, -d, -u, -X; quotes, `\` line continuations, `#` comments, `<PLACEHOLDER>`
 * values); anything else throws, so that an example the test cannot follow fails the test rather
 * than being skipped.
 */

/** The fenced code blocks between `## {heading}` and the next heading of level 1 or 2. */
export function sectionCodeBlocks(markdown: string, heading: string): string[] {
  const lines = markdown.split('\n')
  const start = lines.indexOf(`## ${heading}`)
  if (start === -1) throw new Error(`no section "## ${heading}"`)
  const blocks: string[] = []
  let block: string[] | null = null
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('```')) {
      if (block !== null) blocks.push(`${block.join('\n')}\n`)
      block = block === null ? [] : null
    } else if (block !== null) {
      block.push(line)
    } else if (/^#{1,2} /.test(line)) {
      break
    }
  }
  return blocks
}

export interface ShellCommand {
  /** The command as written, continuation lines joined. */
  readonly text: string
  /** The comment lines just above it, without `#`. */
  readonly comments: readonly string[]
}

/** The commands of a shell block: `\`-continued lines joined; comment lines kept with the next command. */
export function shellCommands(block: string): ShellCommand[] {
  const commands: ShellCommand[] = []
  let comments: string[] = []
  const lines = block.replace(/\\\n/g, ' ').split('\n')
  for (const line of lines) {
    const trimmed = line.trim()
    if (trimmed === '') continue
    if (trimmed.startsWith('#')) comments.push(trimmed.slice(1).trim())
    else {
      commands.push({ text: trimmed, comments })
      comments = []
    }
  }
  return commands
}

/** Splits a command into words as a POSIX shell does for quotes and escapes; a trailing comment is dropped. */
export function shellWords(command: string): string[] {
  const words: string[] = []
  let word: string | null = null
  for (let index = 0; index < command.length; index++) {
    const character = command[index]!
    if (character === "'") {
      const end = command.indexOf("'", index + 1)
      if (end === -1) throw new Error(`unterminated ' in: ${command}`)
      word = (word ?? '') + command.slice(index + 1, end)
      index = end
    } else if (character === '"') {
      let text = ''
      for (index++; index < command.length && command[index] !== '"'; index++) {
        if (command[index] === '\\' && '"\\$`'.includes(command[index + 1] ?? '')) index++
        else if ('$`'.includes(command[index]!)) throw new Error(`expansion in "..." is not followed: ${command}`)
        text += command[index]
      }
      if (index >= command.length) throw new Error(`unterminated " in: ${command}`)
      word = (word ?? '') + text
    } else if (character === '\\') {
      word = (word ?? '') + (command[++index] ?? '')
    } else if (/\s/.test(character)) {
      if (word !== null) words.push(word)
      word = null
    } else if (character === '#' && word === null) {
      break
    } else if ('$`|&;<>(){}*?'.includes(character)) {
      throw new Error(`shell syntax "${character}" is not followed: ${command}`)
    } else {
      word = (word ?? '') + character
    }
  }
  if (word !== null) words.push(word)
  return words
}

/** Replaces every `<NAME>` with its value; throws on a placeholder without one. */
export function fillPlaceholders(text: string, values: Readonly<Record<string, string>>): string {
  return text.replace(/<([A-Z][A-Z_]*)>/g, (_whole, name: string) => {
    const value = values[name]
    if (value === undefined) throw new Error(`no value for <${name}> in: ${text}`)
    return value
  })
}

export interface CurlRequest {
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly body: string | undefined
}

/** A curl command's words as the request curl sends (its -d rules: joined with `&`, form-encoded by default, POST). */
export function curlRequest(words: readonly string[]): CurlRequest {
  if (words[0] !== 'curl') throw new Error(`not a curl command: ${words.join(' ')}`)
  const headers: Record<string, string> = {}
  const data: string[] = []
  let method: string | null = null
  let url: string | null = null
  for (let index = 1; index < words.length; index++) {
    const word = words[index]!
    const argument = (): string => {
      const value = words[++index]
      if (value === undefined) throw new Error(`${word} without a value`)
      return value
    }
    if (word === '-s' || word === '--silent') continue
    if (word === '-H' || word === '--header') {
      const header = argument()
      const colon = header.indexOf(':')
      if (colon <= 0) throw new Error(`bad header: ${header}`)
      headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim()
    } else if (word === '-d' || word === '--data') {
      const value = argument()
      if (value.startsWith('@')) throw new Error(`-d @file is not followed: ${value}`)
      data.push(value)
    } else if (word === '-u' || word === '--user') {
      headers['authorization'] = `Basic ${Buffer.from(argument()).toString('base64')}`
    } else if (word === '-X' || word === '--request') {
      method = argument()
    } else if (word.startsWith('-')) {
      throw new Error(`curl option ${word} is not followed`)
    } else {
      if (url !== null) throw new Error(`two URLs: ${url} and ${word}`)
      url = word
    }
  }
  if (url === null) throw new Error(`curl without a URL: ${words.join(' ')}`)
  if (data.length > 0) headers['content-type'] ??= 'application/x-www-form-urlencoded'
  return {
    method: method ?? (data.length > 0 ? 'POST' : 'GET'),
    url,
    headers,
    body: data.length > 0 ? data.join('&') : undefined,
  }
}

/** `"name":value` pairs quoted in a comment (`{"net":150.89,"gross":169,...}`), values parsed as JSON. */
export function quotedFields(comment: string): Record<string, unknown> {
  const fields: Record<string, unknown> = {}
  for (const match of comment.matchAll(/"([a-z_]+)":\s*("[^"]*"|-?[0-9][0-9.]*|true|false|null)/g)) {
    fields[match[1]!] = JSON.parse(match[2]!)
  }
  return fields
}
