#!/usr/bin/env node
// Entry of the `pricing-service` command: `start` (default) runs the server; other commands manage
// tenants and keys (see `pricing-service help`). The TypeScript sources are compiled to dist/.
import '../dist/server/start.js'
