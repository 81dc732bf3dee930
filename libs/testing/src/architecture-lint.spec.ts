// The layer lint holds: an import that points up the layers (eslint.config.mjs, LAYERS) fails ESLint, one that
// points down passes. Linted as the text of real files of the repository, so the type-aware rules have their program.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint } from 'eslint';

const ROOT = join(__dirname, '../../..');

/** The no-restricted-imports messages ESLint gives `file` with `line` added at its top. */
async function layerErrors(file: string, line: string): Promise<string[]> {
  const eslint = new ESLint({ cwd: ROOT });
  const text = `${line}\nvoid imported;\n${readFileSync(join(ROOT, file), 'utf8')}`;
  const [result] = await eslint.lintText(text, { filePath: join(ROOT, file) });
  return result!.messages.filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the layer lint', () => {
  it('fails an import up the layers: the store importing the session engine', async () => {
    const errors = await layerErrors(
      'libs/store/src/audit.ts',
      "import { SessionService as imported } from '@canopy/session';",
    );
    expect(errors).toEqual([expect.stringMatching(/libs\/store imports only the layers below it/)]);
  }, 60_000);

  it('fails an import across one layer: the session engine importing the manager', async () => {
    const errors = await layerErrors(
      'libs/session/src/title.ts',
      "import { LiveSessions as imported } from '@canopy/manager';",
    );
    expect(errors).toHaveLength(1);
  }, 60_000);

  it('fails the SDK importing server code, and any library importing an app', async () => {
    expect(
      await layerErrors('libs/client/src/errors.ts', "import { Database as imported } from '@canopy/store';"),
    ).toHaveLength(1);
    expect(
      await layerErrors(
        'libs/common/src/process.ts',
        "import { createApiApp as imported } from '../../../apps/api/src/app.factory';",
      ),
    ).toEqual([expect.stringMatching(/never import an app/)]);
  }, 60_000);

  it('passes an import down the layers: the session engine importing the store', async () => {
    expect(
      await layerErrors('libs/session/src/title.ts', "import { Database as imported } from '@canopy/store';"),
    ).toEqual([]);
  }, 60_000);
});
