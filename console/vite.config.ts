import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import react from "@vitejs/plugin-react";
import { defineConfig, type Plugin } from "vite";

/**
 * The emoji picker's data (emojibase-data's English set), served by the console itself: the
 * picker would fetch it from a CDN, which a self-hosted install may not reach. The files go to
 * dist/assets/emojibase-<hash>/en/ (content-hashed, so cached like every asset), and the console
 * reads that folder's URL from EMOJIBASE_URL.
 */
function emojibaseData(): Plugin {
  const require = createRequire(import.meta.url);
  const files = ["data.json", "messages.json"].map((name) => ({
    name,
    source: readFileSync(require.resolve(`emojibase-data/en/${name}`)),
  }));
  const hash = createHash("sha256");
  for (const f of files) hash.update(f.source);
  const folder = `assets/emojibase-${hash.digest("hex").slice(0, 10)}`;
  return {
    name: "emojibase-data",
    config: () => ({ define: { EMOJIBASE_URL: JSON.stringify(`/${folder}`) } }),
    configureServer(server) {
      server.middlewares.use((request, response, next) => {
        const file = files.find((f) => request.url === `/${folder}/en/${f.name}`);
        if (!file) return next();
        response.setHeader("content-type", "application/json");
        response.end(file.source);
      });
    },
    generateBundle() {
      for (const f of files)
        this.emitFile({ type: "asset", fileName: `${folder}/en/${f.name}`, source: f.source });
    },
  };
}

// `npm run dev:console` serves the console with hot reload and forwards the API to a running
// service (CONSOLE_API_URL, default http://127.0.0.1:3000). The forwarded requests carry the
// service's own Origin, so better-auth's origin check sees a same-origin browser.
const api = process.env.CONSOLE_API_URL ?? "http://127.0.0.1:3000";

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react(), emojibaseData()],
  publicDir: false,
  build: {
    outDir: "dist",
    emptyOutDir: true,
    manifest: true,
    target: "es2022",
    chunkSizeWarningLimit: 600,
    // Sizes are measured by scripts/console-size.mjs; computing them here only slows the build.
    reportCompressedSize: false,
  },
  server: {
    port: 5173,
    proxy: {
      "/api": {
        target: api,
        changeOrigin: true,
        configure: (proxy) => {
          proxy.on("proxyReq", (request) => {
            if (request.getHeader("origin")) request.setHeader("origin", api);
          });
        },
      },
      "/docs": { target: api, changeOrigin: true },
    },
  },
});
