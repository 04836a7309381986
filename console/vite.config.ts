import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// `npm run dev:console` serves the console with hot reload and forwards the API to a running
// service (CONSOLE_API_URL, default http://127.0.0.1:3000). The forwarded requests carry the
// service's own Origin, so better-auth's origin check sees a same-origin browser.
const api = process.env.CONSOLE_API_URL ?? "http://127.0.0.1:3000";

export default defineConfig({
  root: import.meta.dirname,
  plugins: [react()],
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
