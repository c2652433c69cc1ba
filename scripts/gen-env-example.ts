/**
 * Writes `.env.example` from the settings table (src/settings/). test/unit/settings checks the file
 * is current, so a setting added to the table without running this fails the unit tests.
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { envExampleText } from "../src/settings/env-example.js";

const path = fileURLToPath(new URL("../.env.example", import.meta.url));
writeFileSync(path, envExampleText());
process.stdout.write(`wrote ${path}\n`);
