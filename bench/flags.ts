/**
 * Command-line flags of the bench scripts (`--name value`), read the same way in each.
 * @module
 */

/** The value after `--name` in `argv`, or undefined when the flag is absent. */
export function flagValue(argv: readonly string[], name: string): string | undefined {
  const index = argv.indexOf(`--${name}`)
  return index < 0 ? undefined : argv[index + 1]
}
