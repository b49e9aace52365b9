#include "cluster/rpc_internal.hpp"

namespace settee {

rpc_node::rpc_node(membership& members, rpc_options opts) : members_(members), opts_(std::move(opts)) {
  for (auto& s : opts_.seeds) members_.add_member(s.name);
}

rpc_node::~rpc_node() {
  stop();
}

status rpc_node::start() {
  auto ready = std::make_shared<std::promise<status>>();
  auto ready_future = ready->get_future();
  auto control = std::make_shared<loop_control>();
  thread_ = std::thread([this, ready, control]() {
    bool started = false;
    try {
      mark_event_loop_thread();  // nothing here may wait for a commit (bridge.cpp checks)
      auto io = kj::setupAsyncIo();
      auto addr = io.provider->getNetwork().parseAddress(opts_.bind, opts_.port).wait(io.waitScope);
      auto listener = addr->listen();
      port_ = static_cast<uint16_t>(listener->getPort());
      opts_.port = port_;
      {
        loop state(members_, opts_, io);
        state.tasks.add(state.accept_loop(*listener));
        control->send_reads = [this](loop& l, pending_reads& r) { send_reads(l, r); };
        control->send_writes = [this](loop& l, pending_writes& w) { send_writes(l, w); };
        {
          std::lock_guard<std::mutex> lock(control->mu);
          control->running = true;
        }
        state.tasks.add(control->drain(state));
        for (auto& s : opts_.seeds) state.add_peer(s);
        auto paf = kj::newPromiseAndFulfiller<void>();
        control->executor = kj::getCurrentThreadExecutor().addRef();
        control->stop = kj::mv(paf.fulfiller);
        control->state = &state;
        started = true;
        ready->set_value({});
        paf.promise.wait(io.waitScope);
        control->close();
        control->stop = nullptr;
        control->state = nullptr;
      }  // the loop state goes before the listener and the event loop it uses
    } catch (const kj::Exception& e) {
      std::string what = std::string("cluster RPC: ") + e.getDescription().cStr();
      if (!started)
        ready->set_value({errc::internal, what});
      else
        log::error(what);
    }
  });
  status st = ready_future.get();
  if (!st) {
    thread_.join();
    return st;
  }
  control_ = control;
  stop_ = [control]() {
    control->executor->executeSync([&]() {
      if (control->stop) control->stop->fulfill();
    });
  };
  return {};
}

void rpc_node::stop() {
  if (stop_) {
    try {
      stop_();
    } catch (const kj::Exception&) {
      // the loop already ended
    }
    stop_ = nullptr;
  }
  if (thread_.joinable()) thread_.join();
}

void rpc_node::post(std::function<void(loop*)> work) {
  loop_control* c = control_.get();
  if (c) {
    std::unique_lock<std::mutex> lock(c->mu);
    if (c->running) {
      c->inbox.push_back(std::move(work));
      c->wake_locked();
      return;
    }
  }
  work(nullptr);
}

status rpc_node::on_loop(const std::function<void(loop&)>& start) {
  if (!control_ || !control_->executor) return {errc::unavailable, "cluster RPC is not running"};
  status st;
  try {
    control_->executor->executeSync([&]() {
      if (control_->state)
        start(*control_->state);
      else
        st = {errc::unavailable, "cluster RPC is stopping"};
    });
  } catch (const kj::Exception& e) {
    return {errc::unavailable, std::string("cluster RPC: ") + e.getDescription().cStr()};
  }
  return st;
}

status rpc_node::add_peer(const peer_address& peer) {
  return on_loop([&](loop& l) { l.add_peer(peer, true); });
}

status rpc_node::remove_peer(const std::string& name) {
  return on_loop([&](loop& l) { l.remove_peer(name); });
}

}  // namespace settee
