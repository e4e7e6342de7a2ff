/**
 * The admin token: HOOKPOST_ADMIN_TOKEN when given (never printed), else one generated on first
 * start and kept in <data dir>/admin-token with mode 0600, printed only when just generated.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface AdminToken {
  token: string;
  source: 'environment' | 'file';
  file?: string;
  generated: boolean;
}

export async function resolveAdminToken(envToken: string | undefined, dataDir: string): Promise<AdminToken> {
  if (envToken) return { token: envToken, source: 'environment', generated: false };
  const file = path.join(dataDir, 'admin-token');
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (token) return { token, source: 'file', file, generated: false };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  await mkdir(dataDir, { recursive: true });
  const token = `hp_${randomBytes(32).toString('base64url')}`;
  // 'wx' fails if another process created the file meanwhile: then use theirs.
  try {
    await writeFile(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return resolveAdminToken(envToken, dataDir);
    throw error;
  }
  return { token, source: 'file', file, generated: true };
}
