/**
 * The active interpreter of the Python extension (ms-python.python), when it is installed.
 * Optional: Gatehouse does not depend on that extension; any failure here means "no answer".
 */
import * as vscode from 'vscode';

interface EnvironmentPath {
  id: string;
  path: string;
}
interface ResolvedEnvironment {
  executable: { uri?: vscode.Uri };
}
interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri): EnvironmentPath;
  resolveEnvironment(env: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
}
interface PythonExtensionApi {
  environments?: PythonEnvironmentsApi;
}

export async function activePythonFromExtension(resource?: vscode.Uri): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (extension === undefined) return undefined;
  const api = extension.isActive ? extension.exports : await extension.activate();
  const environments = api?.environments;
  if (environments === undefined) return undefined;
  const active = environments.getActiveEnvironmentPath(resource);
  const resolved = await environments.resolveEnvironment(active);
  return resolved?.executable.uri?.fsPath ?? active.path;
}
