/**
 * Command-line flags of the bench scripts (`--name value`), read the same way in each.
 * @module
 */

/** The value after `--name` in `argv`, or undefined when the flag is absent. */
export function flagValue(argv: readonly string[], name: string): string | undefined {
  const index = argv.indexOf(`--${name}`)
  return index < 0 ? undefined : argv[index + 1]
}

/** Every value after a repeated `--name` in `argv`, in order. */
export function flagValues(argv: readonly string[], name: string): string[] {
  const values: string[] = []
  for (let index = 0; index < argv.length - 1; index++) if (argv[index] === `--${name}`) values.push(argv[index + 1]!)
  return values
}
