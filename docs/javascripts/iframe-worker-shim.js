/* Search from the file system (build/docs/index.html opened in a browser).
 *
 * Browsers refuse to start a Web Worker from a file:// page, and MkDocs Material runs its
 * search in one. Under file:// this replaces `Worker` with an object that runs the worker's
 * script in a hidden same-origin iframe and passes the messages both ways, as the
 * `iframe-worker` package does (mkdocs.yml lists this file under `extra.polyfills`, so the
 * offline plugin does not fetch that package from a CDN). Served over http(s), it does nothing.
 */
(function () {
  "use strict";
  if (location.protocol !== "file:") return;

  function copy(data, realm) {  // plain JSON data, rebuilt in the receiving window's realm
    return data === undefined ? data : realm.JSON.parse(JSON.stringify(data));
  }

  function IFrameWorker(url) {
    var worker = this;
    this.onmessage = null;
    this._listeners = [];
    this._queue = [];
    this._ready = false;
    var iframe = document.createElement("iframe");
    iframe.setAttribute("aria-hidden", "true");
    iframe.setAttribute("tabindex", "-1");
    iframe.style.display = "none";
    document.body.appendChild(iframe);
    this._iframe = iframe;
    var realm = iframe.contentWindow;
    realm.postMessage = function (data) {  // the worker's postMessage: back to this page
      var event = { data: copy(data, window), type: "message" };
      setTimeout(function () {
        if (typeof worker.onmessage === "function") worker.onmessage(event);
        worker._listeners.slice().forEach(function (fn) { fn.call(worker, event); });
      }, 0);
    };
    realm.importScripts = function () {
      throw new Error("importScripts is not available to a worker run from the file system");
    };
    var script = realm.document.createElement("script");
    script.src = new URL(url, location.href).href;
    script.onload = function () {
      worker._ready = true;
      worker._queue.splice(0).forEach(function (data) { worker.postMessage(data); });
    };
    realm.document.head.appendChild(script);
  }

  IFrameWorker.prototype.postMessage = function (data) {
    if (!this._ready) {
      this._queue.push(data);
      return;
    }
    var realm = this._iframe.contentWindow;
    realm.dispatchEvent(new realm.MessageEvent("message", { data: copy(data, realm) }));
  };
  IFrameWorker.prototype.addEventListener = function (type, fn) {
    if (type === "message") this._listeners.push(fn);
  };
  IFrameWorker.prototype.removeEventListener = function (type, fn) {
    this._listeners = this._listeners.filter(function (f) { return f !== fn; });
  };
  IFrameWorker.prototype.terminate = function () {
    this._iframe.remove();
  };

  window.IFrameWorker = IFrameWorker;
  window.Worker = IFrameWorker;
})();
