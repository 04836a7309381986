export function hashFiles(paths: string[]): string;
export function consoleSourceHash(): string;
export function consoleIsFresh(): boolean;
export function buildConsole(options?: { force?: boolean; quiet?: boolean }): Promise<boolean>;
